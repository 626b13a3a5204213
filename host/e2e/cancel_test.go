package e2e

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// openStream POSTs body and returns the SSE response, checking that it
// is a stream.
func openStream(t *testing.T, ctx context.Context, url, body string, headers map[string]string) (*http.Response, *bufio.Scanner) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("want an event stream, got %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp, bufio.NewScanner(resp.Body)
}

// nextData returns the next data: line of a stream, "" at its end.
func nextData(sc *bufio.Scanner) string {
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "data: ") {
			return strings.TrimPrefix(l, "data: ")
		}
	}
	return ""
}

// TestCancellation: legacy notifications/cancelled ends a call in a
// session without a response; in 2026-07-28 closing the stream cancels
// the call, and progress tokens come back with their JSON type.
func TestCancellation(t *testing.T) {
	t.Parallel()
	onEngines(t, testCancellation)
}

func testCancellation(t *testing.T, engine string) {
	a := start(t, nil, "--engine", engine)
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	resp, _ := post(t, a.URL, initBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	h := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}

	slow := `{"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"aiod_slow","arguments":{"ms":20000},"_meta":{"progressToken":"tok"}}}`
	began := time.Now()
	sresp, sc := openStream(t, context.Background(), a.URL, slow, h)
	defer sresp.Body.Close()
	if first := nextData(sc); !strings.Contains(first, `"progressToken":"tok"`) {
		t.Fatalf("first event: %s", first)
	}
	if r, _ := post(t, a.URL, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1","reason":"test"}}`, h); r.StatusCode != 202 {
		t.Fatalf("cancelled: %d", r.StatusCode)
	}
	for {
		d := nextData(sc)
		if d == "" {
			break
		}
		if strings.Contains(d, `"id":"slow-1"`) {
			t.Fatalf("a cancelled request got a response: %s", d)
		}
	}
	if el := time.Since(began); el > 10*time.Second {
		t.Fatalf("the cancelled call ran on for %s", el)
	}
	t.Logf("legacy: stream ended %s after the call began", time.Since(began).Round(time.Millisecond))
	// the stopped call is logged once it has unwound
	for i := 0; i < 100 && !strings.Contains(a.Logs(), `"tool":"aiod_slow"`); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	logsBefore := strings.Count(a.Logs(), `"tool":"aiod_slow"`)
	if logsBefore == 0 {
		t.Fatalf("the cancelled legacy call was not stopped:\n%s", a.Logs())
	}

	// 2026-07-28: the client closing the stream is the cancellation.
	modern := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"aiod_slow","arguments":{"ms":20000},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":5}}}`
	ctx, cancel := context.WithCancel(context.Background())
	mresp, msc := openStream(t, ctx, a.URL, modern, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "aiod_slow"})
	if first := nextData(msc); !strings.Contains(first, `"progressToken":5`) {
		t.Fatalf("first modern event: %s", first)
	}
	closed := time.Now()
	cancel()
	mresp.Body.Close()
	deadline := time.Now().Add(15 * time.Second)
	for strings.Count(a.Logs(), `"tool":"aiod_slow"`) == logsBefore {
		if time.Now().After(deadline) {
			t.Fatalf("closing the stream did not stop the call:\n%s", a.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("modern: call stopped %s after the stream closed", time.Since(closed).Round(time.Millisecond))
	// the server is still fine
	if r, body := post(t, a.URL, listBody, nil); r.StatusCode != 200 || !strings.Contains(body, "aiod_slow") {
		t.Fatalf("after cancellations: %d %s", r.StatusCode, body)
	}
}
