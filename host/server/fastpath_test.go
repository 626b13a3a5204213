package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// rawExchange sends req as it is on a new connection to addr and returns
// the response's status and body.
func rawExchange(t *testing.T, addr, req string) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// serveApp serves app on a loopback listener and returns its address.
func serveApp(t *testing.T, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln)
	t.Cleanup(func() { app.Shutdown() })
	return ln.Addr().String()
}

// TestHeadersAsPeek: the headers one pass finds (reqHeaders) answer what a
// Peek of each name answers, over requests as clients write them and as
// they may: names in any case, a header sent twice (the first counts),
// empty values, lists of forwarded values.
func TestHeadersAsPeek(t *testing.T) {
	names := []string{"Accept", "MCP-Protocol-Version", "Mcp-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Mcp-Name",
		"Mcp-Param-Region", "Content-Type", "X-Custom"}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.All("/h", func(c *fiber.Ctx) error {
		var h reqHeaders
		h.scan(c)
		var out strings.Builder
		for _, n := range names {
			if got, want := h.Get(n), string(c.Request().Header.Peek(n)); got != want {
				fmt.Fprintf(&out, "%s: %q, Peek %q\n", n, got, want)
			}
		}
		for i, n := range map[int]string{hFwdProto: "X-Forwarded-Proto", hFwdHost: "X-Forwarded-Host", hFwdPrefix: "X-Forwarded-Prefix"} {
			v, _, _ := strings.Cut(string(c.Request().Header.Peek(n)), ",")
			if got, want := h.forwarded(i), strings.TrimSpace(v); got != want {
				fmt.Fprintf(&out, "%s: %q, Peek %q\n", n, got, want)
			}
		}
		if out.Len() == 0 {
			return c.SendString("same")
		}
		return c.SendString(out.String())
	})
	addr := serveApp(t, app)
	for _, headers := range []string{
		"Accept: application/json, text/event-stream\r\n",
		"accept: text/event-stream, application/json\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: echo\r\n",
		"ACCEPT: first\r\nAccept: second\r\nMCP-PROTOCOL-VERSION: 2025-06-18\r\nMcp-Protocol-Version: 2025-11-25\r\n",
		"Accept:\r\nAccept: later\r\nMcp-Session-Id: \r\nMcp-Session-Id: s2\r\n",
		"Mcp-Session-Id: abc.def\r\nMcp-Param-Region: eu\r\nX-Custom: x\r\n",
		"X-Forwarded-Proto: https, http\r\nX-Forwarded-Host:  proxy.example , inner\r\nX-Forwarded-Prefix: /aiod\r\nx-forwarded-host: second\r\n",
		"x-forwarded-proto: \r\nX-FORWARDED-PREFIX: ,/p\r\n",
		"",
	} {
		req := "POST /h HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + headers + "Content-Length: 2\r\nConnection: close\r\n\r\n{}"
		if st, body := rawExchange(t, addr, req); st != 200 || body != "same" {
			t.Errorf("headers %q: %d %s", headers, st, body)
		}
	}
}

// TestBodyAsFiber: body gives what Fiber's Body gives: the bytes as sent,
// and a Content-Encoding's decoded body (gzip; a coding Fiber does not
// know is its error text, as before).
func TestBodyAsFiber(t *testing.T) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Post("/b", func(c *fiber.Ctx) error {
		got := append([]byte(nil), body(c)...)
		want := c.Body()
		if !bytes.Equal(got, want) {
			return c.SendString(fmt.Sprintf("body %q, Body %q", got, want))
		}
		return c.Send(append([]byte("same:"), got...))
	})
	addr := serveApp(t, app)
	msg := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(msg))
	w.Close()
	for _, c := range []struct {
		name, headers, body, want string
	}{
		{"plain", "", msg, "same:" + msg},
		{"gzip", "Content-Encoding: gzip\r\n", gz.String(), "same:" + msg},
		{"empty coding", "Content-Encoding: \r\n", msg, "same:" + msg},
		{"unknown coding", "Content-Encoding: br2\r\n", msg, ""},
	} {
		req := fmt.Sprintf("POST /b HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s", c.headers, len(c.body), c.body)
		st, got := rawExchange(t, addr, req)
		if st != 200 || !strings.HasPrefix(got, "same:") || (c.want != "" && got != c.want) {
			t.Errorf("%s: %d %q", c.name, st, got)
		}
	}
}

// TestHostSeenKeepsTheRule: the Host value the guard remembers answers for
// itself only: another value is judged by the rule, and what is
// remembered is a copy (the request's buffer is reused).
func TestHostSeenKeepsTheRule(t *testing.T) {
	g := newGuard(Options{Loopback: true, AllowedHosts: []string{"mcp.example"}})
	buf := []byte("localhost:8080")
	if !g.hostOK(string(buf[:])) || !g.hostOK(unsafeString(buf)) {
		t.Fatal("localhost refused")
	}
	copy(buf, "evil.exa.com:1")
	for _, c := range []struct {
		host string
		ok   bool
	}{
		{"evil.exa.com:1", false}, {"localhost:8080", true}, {"attacker.example", false}, {"127.0.0.1:9", true},
		{"attacker.example", false}, {"MCP.example", true}, {"mcp.example.evil", false}, {"", true}, {"api.localhost", true},
		{"localhost.evil", false}, {"[::1]:80", true}, {"127.0.0.1.evil", false},
	} {
		for range 2 { // judged, then (when accepted) remembered
			if got := g.hostOK(c.host); got != c.ok {
				t.Errorf("hostOK(%q) = %v, want %v", c.host, got, c.ok)
			}
		}
	}
	if got := g.hostOK(unsafeString(buf)); got {
		t.Errorf("the remembered value aliases the request's buffer")
	}
}

// TestObserveCountsEveryMethod: the latency series resolved once per
// method (Metrics.observe) count every request, a method outside the
// table's still gets its own series, and no series exists before its
// method's first request.
func TestObserveCountsEveryMethod(t *testing.T) {
	m := NewMetrics(MetricsSources{})
	for range 3 {
		m.observe("tools/call", time.Millisecond)
	}
	m.observe("tools/list", 2*time.Second)
	m.observe("custom/thing", time.Microsecond)
	m.observe("custom/thing", time.Microsecond)
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	sums := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "aiod_mcp_request_duration_seconds" {
			continue
		}
		for _, s := range mf.GetMetric() {
			got[s.GetLabel()[0].GetValue()] = s.GetHistogram().GetSampleCount()
			sums[s.GetLabel()[0].GetValue()] = s.GetHistogram().GetSampleSum()
		}
	}
	want := map[string]uint64{"tools/call": 3, "tools/list": 1, "custom/thing": 2}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d observations, want %d", k, got[k], v)
		}
	}
	if s := sums["tools/list"]; s < 1.99 || s > 2.01 {
		t.Errorf("tools/list sum %v s, want 2", s)
	}
	var _ prometheus.Collector = m.calls
	for i, name := range servedMethods {
		if methodSlot(name) != i {
			t.Errorf("methodSlot(%q) = %d, want %d", name, methodSlot(name), i)
		}
	}
	if methodSlot("tools/call ") != -1 || methodSlot("") != -1 {
		t.Error("methodSlot matches a name it does not serve")
	}
}

func unsafeString(b []byte) string { return unsafe.String(&b[0], len(b)) }
