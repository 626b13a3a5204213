// Command stdioserver is an MCP server over stdio for the upstream tests:
// it reports what the sandbox gives it and can crash, write to stderr and
// start a long-lived child.
//
//	stdioserver [-exit-at-start]
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type in struct {
	Text string `json:"text,omitempty"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	exitAtStart := flag.Bool("exit-at-start", false, "exit at once (a server that keeps dying)")
	flag.Parse()
	if *exitAtStart {
		os.Exit(3)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "stdioserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo text"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return text(a.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "exits at once"}, func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "inspect", Description: "what the sandbox gives"}, func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
		wd, _ := os.Getwd()
		werr := os.WriteFile("/workspace/written", []byte("x"), 0o600)
		_, herr := os.ReadDir("/home")
		return text(fmt.Sprintf("uid=%d\nwd=%s\nwrite=%v\nhome=%v\nenv=%s", os.Getuid(), wd, werr, herr, strings.Join(os.Environ(), " "))), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "dial", Description: "connects to text (host:port)"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		c, err := net.DialTimeout("tcp", a.Text, 2*time.Second)
		if err != nil {
			return text("dial: " + err.Error()), nil, nil
		}
		c.Close()
		return text("dial: ok"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "stderr", Description: "writes text to stderr"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, a.Text)
		return text("written"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "spawn", Description: "starts a long-lived child: a shell with text in its command line"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		// the marker is the shell's $0, in its command line while it waits
		c := exec.Command("/bin/sh", "-c", "sleep 300; :", a.Text)
		if err := c.Start(); err != nil {
			return text("spawn: " + err.Error()), nil, nil
		}
		return text("spawned"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "three progress notifications, then done"}, func(ctx context.Context, req *mcp.CallToolRequest, _ in) (*mcp.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			for i := 1; i <= 3; i++ {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3})
			}
		}
		return text("done"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "flood", Description: "writes a 17 MiB message to stdout"}, func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
		os.Stdout.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("A", 17<<20) + "\"}}\n")
		select {} // the answer never comes
	})
	mcp.AddTool(s, &mcp.Tool{Name: "garbage", Description: "writes a line that is not JSON-RPC to stdout"}, func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
		os.Stdout.WriteString("this is not JSON-RPC\n")
		select {}
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}
