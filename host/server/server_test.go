package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// serve starts s on a loopback listener and returns its address.
func serve(t testing.TB, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return ln.Addr().String()
}

// TestTooLargeBodyIsReadable: a client that writes its whole oversized
// body before reading gets the 413 and its JSON-RPC error, not a reset
// connection.
func TestTooLargeBodyIsReadable(t *testing.T) {
	addr := serve(t, New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	size := mcp.MaxBodyBytes + 1<<20 // 9 MiB
	for _, tc := range []struct {
		name string
		head string
		body func(w io.Writer) error
	}{
		{"content-length", fmt.Sprintf("Content-Length: %d\r\n", size), func(w io.Writer) error {
			_, err := w.Write(bytes.Repeat([]byte("x"), size))
			return err
		}},
		{"chunked", "Transfer-Encoding: chunked\r\n", func(w io.Writer) error {
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for n := 0; n < size; n += len(chunk) {
				if _, err := fmt.Fprintf(w, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
					return err
				}
			}
			_, err := io.WriteString(w, "0\r\n\r\n")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			w := bufio.NewWriter(c)
			fmt.Fprintf(w, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s\r\n", addr, tc.head)
			if err := tc.body(w); err != nil {
				t.Fatalf("writing the body: %v", err)
			}
			if err := w.Flush(); err != nil {
				t.Fatalf("writing the body: %v", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("reading the response: %v", err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("reading the response body: %v", err)
			}
			if resp.StatusCode != 413 {
				t.Fatalf("status %d, want 413: %s", resp.StatusCode, body)
			}
			var e struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != -32600 || !strings.Contains(e.Error.Message, "8 MiB") {
				t.Fatalf("body %q (%v), want a -32600 error naming the 8 MiB limit", body, err)
			}
		})
	}
}

// TestTooLargeBodyPythonClient: Python's urllib, which sends the whole
// body before it reads, reads the 413 (it saw a broken pipe before).
func TestTooLargeBodyPythonClient(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is not installed; CI needs it for this test")
		}
		t.Skip("python3 is not installed")
	}
	addr := serve(t, New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	script := `
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], data=b"x" * (9 << 20), headers={"Content-Type": "application/json"})
try:
    urllib.request.urlopen(req, timeout=30)
    print("no error")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
`
	out, err := exec.Command(py, "-c", script, "http://"+addr+"/mcp").CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "413 ") || !strings.Contains(string(out), `"code":-32600`) {
		t.Fatalf("python3 saw %q, want the 413 and its JSON-RPC error", out)
	}
}

func TestRPCErrorBody(t *testing.T) {
	for _, tc := range []struct {
		code int
		msg  string
	}{
		{-32600, "request body exceeds 8 MiB"},
		{-32601, `quote " and backslash \ inside`},
		{-32603, "control\x00chars\n\tand \x1f"},
		{0, "é ünïcode <html> & stuff"},
		{12345, ""},
	} {
		body := rpcErrorBody(tc.code, tc.msg)
		var e struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("%q is not JSON: %v", body, err)
		}
		if e.JSONRPC != "2.0" || string(e.ID) != "null" || e.Error.Code != tc.code || e.Error.Message != tc.msg {
			t.Fatalf("rpcErrorBody(%d, %q) = %s", tc.code, tc.msg, body)
		}
	}
}

func BenchmarkRPCErrorBody(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = rpcErrorBody(-32600, "Forbidden: invalid Host header")
	}
}

// BenchmarkHTTPEcho is the echo tools/call through the whole HTTP stack
// over a loopback connection.
func BenchmarkHTTPEcho(b *testing.B) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "build", "plugins")
	if _, err := os.Stat(filepath.Join(dir, "echo", "manifest.json")); err != nil {
		b.Skip("build/plugins/echo is missing: run `make plugins`")
	}
	ctx := context.Background()
	eng, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir()}) // compiled once per machine
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Dir: dir, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close(ctx)
	m := mcp.NewServer(reg, mcp.Options{Logger: log})
	addr := serve(b, New(Options{MCP: m, Logger: log}))
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	c := &http.Client{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Post("http://"+addr+"/mcp", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
