package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/tenant"
)

// flaky fails its writes while broken is set.
type flaky struct {
	bytes.Buffer
	broken bool
}

func (f *flaky) Write(b []byte) (int, error) {
	if f.broken {
		return 0, errors.New("disk full")
	}
	return f.Buffer.Write(b)
}

func serve(t *testing.T, l *Log, ctx context.Context, req *mcp.Request, res string, err error) (json.RawMessage, error, bool) {
	t.Helper()
	ran := false
	h := l.Middleware()(func(context.Context, *mcp.Request) (json.RawMessage, error) {
		ran = true
		if err != nil {
			return nil, err
		}
		return json.RawMessage(res), nil
	})
	out, e := h(ctx, req)
	return out, e, ran
}

func TestLine(t *testing.T) {
	w := &flaky{}
	l := New(w, Options{})
	set := tenant.New(map[string]caps.Tenant{"alice": {Tools: []string{"echo"}}}, "")
	alice, _ := set.Lookup("alice")
	ctx := tenant.WithTenant(context.Background(), alice)
	args := `{"password":"hunter2","text":"top secret"}`
	req := &mcp.Request{Method: "tools/call", Name: "echo", Params: json.RawMessage(`{"name":"echo","arguments":` + args + `}`), SessionID: "s1"}
	serve(t, l, ctx, req, `{"content":[{"type":"text","text":"top secret"}],"isError":true}`, nil)
	serve(t, l, ctx, &mcp.Request{Method: "tools/call", Name: "hidden", Params: json.RawMessage(`{"name":"hidden"}`)}, "", mcp.UnknownTool("hidden"))
	serve(t, l, ctx, &mcp.Request{Method: "ping"}, "", &mcp.Error{Code: -32601, Message: "x"})
	log := w.String()
	for _, secret := range []string{"hunter2", "top secret", "password"} {
		if strings.Contains(log, secret) {
			t.Fatalf("the audit log holds %q:\n%s", secret, log)
		}
	}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), log)
	}
	var e Entry
	if err := json.Unmarshal([]byte(lines[0]), &e); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(args))
	if e.Tenant != "alice" || e.Session != "s1" || e.Tool != "echo" || e.Outcome != ToolError || e.ArgsSHA256 != hex.EncodeToString(sum[:]) || e.ResultBytes == 0 {
		t.Fatalf("line 1: %+v", e)
	}
	for i, want := range []Outcome{Denied, ProtocolError} {
		var e Entry
		json.Unmarshal([]byte(lines[i+1]), &e)
		if e.Outcome != want {
			t.Errorf("line %d: outcome %s, want %s", i+2, e.Outcome, want)
		}
	}
}

// TestRequired: a request whose line cannot be written is refused; while
// the log fails the next is refused before it runs; when writes work
// again requests are served.
func TestRequired(t *testing.T) {
	w := &flaky{broken: true}
	l := New(w, Options{Required: true})
	req := &mcp.Request{Method: "tools/call", Name: "echo"}
	if _, err, ran := serve(t, l, context.Background(), req, `{}`, nil); err == nil || !ran {
		t.Fatalf("first call with a broken log: err %v (ran %v), want refused", err, ran)
	}
	if _, err, ran := serve(t, l, context.Background(), req, `{}`, nil); err == nil || ran {
		t.Fatalf("call while the log is failing: err %v, ran %v: want refused before running", err, ran)
	}
	w.broken = false
	if res, err, ran := serve(t, l, context.Background(), req, `{}`, nil); err != nil || !ran || string(res) != "{}" {
		t.Fatalf("log mended: %s %v %v", res, err, ran)
	}
	// not required: a failing log does not refuse
	w.broken = true
	l2 := New(w, Options{})
	if _, err, _ := serve(t, l2, context.Background(), req, `{}`, nil); err != nil {
		t.Fatalf("optional log: %v", err)
	}
	if err := l.Close(); err != nil || l.Close() != nil {
		t.Fatal("Close must be idempotent")
	}
}

func TestEnrichment(t *testing.T) {
	call := &mcp.Request{Method: "tools/call", Name: "echo"}
	big := `{"content":[],"_meta":{"aiod.dev/audit":{"x":"` + strings.Repeat("a", MaxEnrichedBytes) + `"}}}`
	for _, tc := range []struct {
		name string
		req  *mcp.Request
		res  string
		want string
	}{
		{"recorded", call, `{"content":[],"_meta":{"aiod.dev/audit":{"labels":{"team":"p"}},"other":1}}`, `{"labels":{"team":"p"}}`},
		{"none", call, `{"content":[]}`, ""},
		{"not an object", call, `{"_meta":{"aiod.dev/audit":"x"}}`, ""},
		{"too large", call, big, ""},
		{"only in _meta", call, `{"content":[{"type":"text","text":"\"aiod.dev/audit\""}]}`, ""},
		{"not a tool call", &mcp.Request{Method: "prompts/get"}, `{"_meta":{"aiod.dev/audit":{"a":1}}}`, ""},
		{"not JSON", call, `{"_meta":{"aiod.dev/audit":`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := enrichment(tc.req, json.RawMessage(tc.res)); string(got) != tc.want {
				t.Fatalf("enrichment = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRecent: the last RecentEntries entries are kept newest first, with a
// file or in memory only; in memory only they carry no digest of the
// arguments, and never the arguments.
func TestRecent(t *testing.T) {
	for _, w := range []*flaky{{}, nil} {
		var l *Log
		if w != nil {
			l = New(w, Options{})
		} else {
			l = New(nil, Options{})
		}
		if got := l.Recent(); len(got) != 0 {
			t.Fatalf("a new log has %d recent entries", len(got))
		}
		for i := range RecentEntries + 7 {
			req := &mcp.Request{Method: "tools/call", Name: "echo", Step: i,
				Params: json.RawMessage(`{"name":"echo","arguments":{"text":"secret-value"}}`)}
			serve(t, l, context.Background(), req, `{"content":[]}`, nil)
		}
		got := l.Recent()
		if len(got) != RecentEntries || got[0].Step != RecentEntries+6 || got[len(got)-1].Step != 7 {
			t.Fatalf("recent: %d entries, from step %d to %d", len(got), got[0].Step, got[len(got)-1].Step)
		}
		b, _ := json.Marshal(got)
		if strings.Contains(string(b), "secret-value") {
			t.Fatal("a recent entry holds an argument value")
		}
		if (got[0].ArgsSHA256 == "") != (w == nil) {
			t.Fatalf("with a file %v: args digest %q", w != nil, got[0].ArgsSHA256)
		}
	}
	var nilLog *Log
	if nilLog.Recent() != nil {
		t.Fatal("a nil log has recent entries")
	}
}
