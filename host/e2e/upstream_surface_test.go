//lint:file-ignore SA1019 sampling is deprecated in 2026-07-28 but live in the eras aiod relays

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everythingServer starts @modelcontextprotocol/server-everything (npm) on
// a free loopback port, over Streamable HTTP or (transport "sse") the
// 2024-11-05 HTTP+SSE transport, and returns its URL.
func everythingServer(t *testing.T, node, pkg, transport string) string {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(node, pkg, transport)
	cmd.Env = append(os.Environ(), "PORT="+port)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := "http://127.0.0.1:" + port + "/mcp"
	if transport == "sse" {
		url = "http://127.0.0.1:" + port + "/sse"
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://127.0.0.1:" + port + "/")
		if err == nil {
			resp.Body.Close()
			return url
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the everything server did not listen on %s", port)
	return ""
}

// surfaceClient connects the go-sdk client (v1.8.0) to aiod in protocol
// version v. answer: it declares elicitation and sampling and answers them
// (the form with a name, a completion with a fixed text); otherwise it
// declares neither.
func surfaceClient(t *testing.T, url, v string, answer bool) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if answer {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if !strings.Contains(req.Params.Message, "Please provide inputs") {
				return nil, fmt.Errorf("unexpected elicitation %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace-" + v}}, nil
		}
		opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "aiod-e2e", Role: "assistant", Content: &mcp.TextContent{Text: "sampled by the client in " + v}}, nil
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "aiod-e2e-surface", Version: "1.0.0"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatalf("go-sdk connect (%s): %v", v, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func text(c []mcp.Content) string {
	var b strings.Builder
	for _, x := range c {
		if tc, ok := x.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestEverythingUpstream: the everything server (npm) as a policy upstream
// over Streamable HTTP, over the 2024-11-05 HTTP+SSE transport, and as a
// command server in the sandbox (stdio); the
// TypeScript v2 client and the go-sdk client, each in both eras, get its
// prompts (listed, got, completed), its resources and templates (listed,
// read), and answer its elicitation and sampling through aiod; a client
// without those capabilities gets a clear isError.
func TestEverythingUpstream(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "upstream servers do not depend on the engine")
	nodeBin := nodeTools(t)
	tools := filepath.Clean(filepath.Join(nodeBin, "..", "..", ".."))
	node := filepath.Join(nodeBin, "node")
	pkg := filepath.Join(tools, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	url := everythingServer(t, node, pkg, "streamableHttp")
	old := everythingServer(t, node, pkg, "sse")
	policy := stdioPolicy(t, map[string]any{
		"ev":  map[string]any{"url": url, "prefix": "ev"},
		"evo": map[string]any{"url": old, "prefix": "evo", "transport": "sse"},
		"evs": map[string]any{"command": node, "args": []string{pkg, "stdio"}, "prefix": "evs", "read_only": []string{tools}},
	})
	a := start(t, nil, "--policy", policy, "--data-dir", t.TempDir(), "--upstream-list-timeout", "30s")
	// The TypeScript v2 client in both eras, through each transport.
	for _, era := range []string{"modern", "legacy"} {
		for _, p := range []string{"ev", "evs"} {
			r := runNode(t, nil, clientScript("ts-v2-surface.mjs"), a.URL, era, p)
			if r["era"] != era || r["asked"] != float64(1) {
				t.Fatalf("ts-v2 %s %s: %v", era, p, r)
			}
		}
	}
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		for _, p := range []string{"ev", "evs", "evo"} {
			t.Run(v+"/"+p, func(t *testing.T) {
				cs := surfaceClient(t, a.URL, v, true)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				lp, err := cs.ListPrompts(ctx, nil)
				if err != nil {
					t.Fatalf("prompts/list: %v\n%s", err, a.Logs())
				}
				var prompts []string
				for _, x := range lp.Prompts {
					prompts = append(prompts, x.Name)
				}
				for _, want := range []string{p + "_simple-prompt", p + "_args-prompt", p + "_completable-prompt"} {
					if !slices.Contains(prompts, want) {
						t.Fatalf("prompts/list: no %s in %v\n%s", want, prompts, a.Logs())
					}
				}
				gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: p + "_args-prompt", Arguments: map[string]string{"city": "Paris"}})
				if err != nil || len(gp.Messages) != 1 || text([]mcp.Content{gp.Messages[0].Content}) != "What's weather in Paris?" {
					t.Fatalf("prompts/get: %v %+v", err, gp)
				}
				cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: p + "_completable-prompt"},
					Argument: mcp.CompleteParamsArgument{Name: "department", Value: "Eng"}})
				if err != nil || !slices.Contains(cr.Completion.Values, "Engineering") {
					t.Fatalf("completion/complete: %v %+v\n%s", err, cr, a.Logs())
				}
				lr, err := cs.ListResources(ctx, nil)
				if err != nil {
					t.Fatalf("resources/list: %v", err)
				}
				base := "upstream://" + p + "/demo://"
				var doc string
				for _, r := range lr.Resources {
					if strings.HasPrefix(r.URI, base+"resource/static/document/") {
						doc = r.URI
					}
				}
				if doc == "" {
					t.Fatalf("resources/list: no %s document in %d resources", base, len(lr.Resources))
				}
				rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: doc})
				if err != nil || len(rr.Contents) == 0 || rr.Contents[0].URI != doc || rr.Contents[0].Text == "" {
					t.Fatalf("resources/read %s: %v %+v", doc, err, rr)
				}
				lt, err := cs.ListResourceTemplates(ctx, nil)
				if err != nil {
					t.Fatalf("resources/templates/list: %v", err)
				}
				var templates []string
				for _, x := range lt.ResourceTemplates {
					templates = append(templates, x.URITemplate)
				}
				if !slices.Contains(templates, base+"resource/dynamic/text/{resourceId}") {
					t.Fatalf("resources/templates/list: %v", templates)
				}
				rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: base + "resource/dynamic/text/7"})
				if err != nil || len(rr.Contents) == 0 || !strings.Contains(rr.Contents[0].Text, "7") {
					t.Fatalf("resources/read of a template's URI: %v %+v", err, rr)
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: p + "_trigger-elicitation-request", Arguments: map[string]any{}})
				if err != nil || res.IsError || !strings.Contains(text(res.Content), "Ada Lovelace-"+v) {
					t.Fatalf("elicitation through aiod: %v %+v\n%s", err, res, a.Logs())
				}
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: p + "_trigger-sampling-request", Arguments: map[string]any{"prompt": "hello", "maxTokens": 20}})
				if err != nil || res.IsError || !strings.Contains(text(res.Content), "sampled by the client in "+v) {
					t.Fatalf("sampling through aiod: %v %+v\n%s", err, res, a.Logs())
				}
				// A client that declared neither capability: a clear
				// isError, and the upstream is not left waiting.
				bare := surfaceClient(t, a.URL, v, false)
				res, err = bare.CallTool(ctx, &mcp.CallToolParams{Name: p + "_trigger-elicitation-request", Arguments: map[string]any{}})
				if err != nil || !res.IsError || !strings.Contains(text(res.Content), "the client cannot answer") || !strings.Contains(text(res.Content), "elicitation") {
					t.Fatalf("a client without elicitation: %v %+v", err, res)
				}
			})
		}
	}
}
