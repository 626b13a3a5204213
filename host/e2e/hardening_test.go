package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const listBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

// TestAPIKey: with a key every route but /health answers 401 without it;
// both header forms work; the key never reaches the logs; real clients
// pass it.
func TestAPIKey(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "the HTTP key check is host-side")
	const key = "e2e-secret-key-9f3b"
	a := start(t, []string{"AIO_API_KEY=" + key})
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"none", nil, 401},
		{"wrong bearer", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"wrong x-api-key", map[string]string{"x-api-key": key + "x"}, 401},
		{"bearer", map[string]string{"Authorization": "Bearer " + key}, 200},
		{"x-api-key", map[string]string{"x-api-key": key}, 200},
	} {
		resp, body := post(t, a.URL, listBody, tc.headers)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, resp.StatusCode, tc.want, body)
		}
		if tc.want == 401 && !strings.Contains(body, `"jsonrpc":"2.0"`) {
			t.Errorf("%s: 401 body is not a JSON-RPC error: %s", tc.name, body)
		}
	}
	for path, want := range map[string]int{"/health": 200, "/v1/capabilities": 401} {
		resp, err := http.Get(a.Base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without key: %d, want %d", path, resp.StatusCode, want)
		}
	}
	runNode(t, []string{"AIOD_CLIENT_API_KEY=" + key}, clientScript("ts-v2.mjs"), a.URL, "modern")
	runNode(t, []string{"AIOD_CLIENT_API_KEY=" + key, "AIOD_CLIENT_API_KEY_HEADER=x-api-key"}, clientScript("ts-v1.mjs"), a.URL)
	goSDKEcho(t, a.URL, "2026-07-28", map[string]string{"Authorization": "Bearer " + key})
	if strings.Contains(a.Logs(), key) {
		t.Fatal("the API key appears in the logs")
	}
}

// TestEmptyAPIKeyRefusesToStart: a key configured but empty fails closed.
func TestEmptyAPIKeyRefusesToStart(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "a start-up refusal before any engine")
	bin, plugins := binaries(t)
	for _, c := range [][]string{
		{"env", "AIO_API_KEY=", bin, "start", "--port", "0", "--plugins-dir", plugins},
		{bin, "start", "--port", "0", "--plugins-dir", plugins, "--api-key", ""},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, c[0], c[1:]...).CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil || timedOut || !strings.Contains(string(out), "empty") {
			t.Fatalf("%v: did not refuse an empty key (err %v): %s", c, err, out)
		}
	}
}

// TestHostOriginAndLimits: DNS rebinding (Host/Origin) is refused, bodies
// over 8 MiB get 413, malformed input of any shape gets a JSON-RPC error.
func TestHostOriginAndLimits(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "the HTTP hardening is host-side")
	a := start(t, nil)
	port := a.Base[strings.LastIndex(a.Base, ":")+1:]
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"evil host and origin", map[string]string{"Host": "evil.example.com", "Origin": "http://evil.example.com"}, 403},
		{"evil host", map[string]string{"Host": "evil.example.com:" + port}, 403},
		{"evil origin", map[string]string{"Origin": "http://evil.example.com"}, 403},
		{"localhost host and origin", map[string]string{"Host": "localhost:" + port, "Origin": "http://localhost:" + port}, 200},
		{"loopback origin", map[string]string{"Origin": "http://127.0.0.1:5173"}, 200},
	} {
		resp, body := post(t, a.URL, listBody, tc.headers)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, resp.StatusCode, tc.want, body)
		}
	}
	// A body over 8 MiB: the server answers 413 as soon as it sees the
	// Content-Length, before reading the body.
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.Base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", port, 9<<20)
	big, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	bb, _ := io.ReadAll(big.Body)
	conn.Close()
	if big.StatusCode != 413 || !strings.Contains(string(bb), "8 MiB") {
		t.Errorf("9 MiB body: %d %s", big.StatusCode, bb)
	}
	for _, bad := range []string{``, `{`, `[]`, `[1,2]`, `"x"`, `42`, `null`, `{"jsonrpc":"2.0"}`, `{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":"x"}}`, "\xff\xfe", `{"jsonrpc":"2.0","id":1,"method":7}`} {
		resp, body := post(t, a.URL, bad, nil)
		if !strings.Contains(body, `"error"`) || !strings.Contains(body, `"jsonrpc":"2.0"`) {
			t.Errorf("body %q: status %d, no JSON-RPC error: %s", bad, resp.StatusCode, body)
		}
	}
	// still alive
	if resp, _ := post(t, a.URL, listBody, nil); resp.StatusCode != 200 {
		t.Fatalf("after malformed input: %d", resp.StatusCode)
	}
}

// TestSessions: initialize mints a visible-ASCII session id, GET opens the
// standalone stream, DELETE ends the session, after which the id is 404.
// Modern requests get 405 for GET and DELETE.
func TestSessions(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "MCP sessions are host-side")
	a := start(t, nil, "--max-sessions", "2")
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	resp, body := post(t, a.URL, initBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %d %q %s", resp.StatusCode, sid, body)
	}
	for _, c := range sid {
		if c < 0x21 || c > 0x7e {
			t.Fatalf("session id %q is not visible ASCII", sid)
		}
	}
	// a version the server does not speak is answered with its newest legacy one
	_, body = post(t, a.URL, strings.Replace(initBody, "2025-11-25", "2023-01-01", 1), nil)
	if !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize with an unknown version: %s", body)
	}
	h := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	if resp, _ := post(t, a.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h); resp.StatusCode != 202 {
		t.Fatalf("initialized: %d", resp.StatusCode)
	}
	if resp, body := post(t, a.URL, listBody, h); resp.StatusCode != 200 || !strings.Contains(body, `"echo"`) {
		t.Fatalf("tools/list in session: %d %s", resp.StatusCode, body)
	}
	if resp, _ := post(t, a.URL, listBody, map[string]string{"MCP-Protocol-Version": "1999-01-01"}); resp.StatusCode != 400 {
		t.Fatalf("unsupported MCP-Protocol-Version: %d", resp.StatusCode)
	}
	// standalone stream
	req, _ := http.NewRequest("GET", a.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	ctx, cancel := context.WithCancel(context.Background())
	gresp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if gresp.StatusCode != 200 || !strings.HasPrefix(gresp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET stream: %d %s", gresp.StatusCode, gresp.Header.Get("Content-Type"))
	}
	// a tool announcing a change reaches the stream
	post(t, a.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_trigger_tool_change","arguments":{}}}`, h)
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(gresp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				line <- sc.Text()
				return
			}
		}
	}()
	select {
	case l := <-line:
		if !strings.Contains(l, "notifications/tools/list_changed") {
			t.Fatalf("GET stream carried %s", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed on the GET stream")
	}
	cancel()
	gresp.Body.Close()

	del, _ := http.NewRequest("DELETE", a.URL, nil)
	del.Header.Set("Mcp-Session-Id", sid)
	dresp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	if dresp.StatusCode != 204 {
		t.Fatalf("DELETE: %d", dresp.StatusCode)
	}
	if resp, _ := post(t, a.URL, listBody, h); resp.StatusCode != 404 {
		t.Fatalf("request on a deleted session: %d, want 404", resp.StatusCode)
	}
	// modern GET/DELETE → 405
	for _, m := range []string{"GET", "DELETE"} {
		r, _ := http.NewRequest(m, a.URL, nil)
		r.Header.Set("MCP-Protocol-Version", "2026-07-28")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 {
			t.Errorf("modern %s: %d, want 405", m, resp.StatusCode)
		}
	}
	// the table is bounded: three sessions fit in two slots by evicting the idlest
	var ids []string
	for i := 0; i < 3; i++ {
		resp, _ := post(t, a.URL, initBody, nil)
		ids = append(ids, resp.Header.Get("Mcp-Session-Id"))
	}
	if resp, _ := post(t, a.URL, listBody, map[string]string{"Mcp-Session-Id": ids[0]}); resp.StatusCode != 404 {
		t.Errorf("oldest session past --max-sessions 2: %d, want 404", resp.StatusCode)
	}
	if resp, _ := post(t, a.URL, listBody, map[string]string{"Mcp-Session-Id": ids[2]}); resp.StatusCode != 200 {
		t.Errorf("newest session: %d, want 200", resp.StatusCode)
	}
	// capabilities and health
	for _, p := range []string{"/health", "/v1/capabilities"} {
		resp, err := http.Get(a.Base + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d", p, resp.StatusCode)
		}
	}
}
