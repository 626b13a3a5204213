package process

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/hostfntest"
	"github.com/aiodhq/aiod/host/proc"
	"github.com/aiodhq/aiod/sdk/abi"
)

func TestParseToolRequest(t *testing.T) {
	for _, tc := range []struct {
		line, name, args, err string
	}{
		{line: `{"name":"a","arguments":{"x":1}}`, name: "a", args: `{"x":1}`},
		{line: `  {"name":"a"}  `, name: "a"},
		{line: `{"name":"a","arguments":null}`, name: "a"},
		{line: `{"name":"a","arguments":{}}`, name: "a", args: `{}`},
		{line: ``, err: "empty request"},
		{line: `[1]`, err: "a request is a JSON object"},
		{line: `"a"`, err: "a request is a JSON object"},
		{line: `{"name":"a"`, err: "bad request"},
		{line: `{"name":"a"}{"name":"b"}`, err: "one JSON object per line"},
		{line: `{"name":""}`, err: "name is required"},
		{line: `{"arguments":{}}`, err: "name is required"},
		{line: `{"name":1}`, err: "bad request"},
		{line: `{"name":"a","arguments":[1]}`, err: "arguments must be an object"},
		{line: `{"name":"a","arguments":"x"}`, err: "arguments must be an object"},
		{line: `{"name":"a","extra":1}`, err: "unknown field"},
		{line: `{"name":"a\u0000b"}`, err: "not a tool name"},
		{line: `{"name":"a\nb"}`, err: "not a tool name"},
		{line: `{"name":"` + strings.Repeat("a", 257) + `"}`, err: "not a tool name"},
	} {
		r, err := ParseToolRequest([]byte(tc.line))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil || r.Name != tc.name || string(r.Arguments) != tc.args {
			t.Errorf("%q: %q %s %v, want %q %s", tc.line, r.Name, r.Arguments, err, tc.name, tc.args)
		}
	}
}

// FuzzParseToolRequest: whatever a program writes, the parser answers a
// request whose name is a printable tool name and whose arguments are an
// object or nothing, or an error; it never panics.
func FuzzParseToolRequest(f *testing.F) {
	for _, s := range []string{`{"name":"a","arguments":{"x":1}}`, `{"name":"a"}`, `[]`, `{"name":"\u0000"}`, `{"name":"a","arguments":[`, "{\"name\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseToolRequest(line)
		if err != nil {
			if r.Name != "" || r.Arguments != nil {
				t.Fatalf("an error with a request: %+v", r)
			}
			return
		}
		if r.Name == "" || len(r.Name) > 256 || strings.ContainsAny(r.Name, "\x00\n\r") {
			t.Fatalf("name %q", r.Name)
		}
		if r.Arguments != nil {
			var m map[string]any
			if json.Unmarshal(r.Arguments, &m) != nil {
				t.Fatalf("arguments %s are not an object", r.Arguments)
			}
		}
	})
}

// toolEnv is the process family over a real manager, with a tool caller
// that answers "<name> <arguments>" (or the error the name asks for) and
// records the calls.
type toolEnv struct {
	defs  map[string]hostfn.Def
	mu    sync.Mutex
	calls []ToolCall
	block chan struct{} // a call of "block" waits on it or its context
}

func newToolEnv(t *testing.T) *toolEnv {
	t.Helper()
	m := proc.New(proc.Config{})
	t.Cleanup(func() { m.Close() })
	f := New(m)
	e := &toolEnv{defs: hostfntest.Defs(f), block: make(chan struct{})}
	SetToolCaller(f, func(ctx context.Context, c ToolCall) ToolAnswer {
		e.mu.Lock()
		e.calls = append(e.calls, c)
		e.mu.Unlock()
		switch c.Name {
		case "fail":
			return ToolAnswer{Error: ToolFailed, Text: "it failed"}
		case "big":
			return ToolAnswer{Text: strings.Repeat("x", MaxToolAnswer+10)}
		case "block":
			select {
			case <-e.block:
			case <-ctx.Done():
				return ToolAnswer{Error: ToolInternal, Text: ctx.Err().Error()}
			}
		}
		return ToolAnswer{Text: c.Name + " " + string(c.Args)}
	})
	return e
}

func toolGrant(tools bool) *caps.Grant {
	scope := &abi.ProcessScope{Commands: []string{"*"}, Cwd: []string{"$TMP"}, Tools: tools}
	p := &caps.Policy{Default: &abi.Capabilities{Process: scope}}
	m := &abi.Manifest{Name: "t", Capabilities: abi.Capabilities{Process: scope}}
	return p.Allow(m, caps.Env{Tmp: os.TempDir()})
}

func (e *toolEnv) spawn(t *testing.T, grant *caps.Grant, script string, tools *abi.ProcessTools, timeout time.Duration) (abi.Code, abi.ProcessSpawnResponse, string) {
	t.Helper()
	req := abi.ProcessSpawnRequest{Argv: []string{"bash", "-c", script}, Tools: tools, TimeoutMs: timeout.Milliseconds(), MaxOutputBytes: 4 << 20}
	b, _ := json.Marshal(req)
	c := &hostfn.Call{Plugin: "code", Owner: "alice", Grant: grant}
	code, raw := hostfntest.Call(context.Background(), e.defs["spawn"], c, b)
	var r abi.ProcessSpawnResponse
	if code == abi.OK {
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("response %s: %v", raw, err)
		}
	}
	return code, r, string(raw)
}

// TestToolChannel runs real programs (bash writing requests to fd 3 and
// reading answers on fd 4) against the family's tool channel.
func TestToolChannel(t *testing.T) {
	e := newToolEnv(t)
	ask := func(line string) string {
		return `printf '%s\n' '` + line + `' >&3; IFS= read -r a <&4; printf '%s\n' "$a"; `
	}
	for _, tc := range []struct {
		name, script string
		tools        *abi.ProcessTools
		want         []string // lines of stdout, in order
		calls        int
	}{
		{name: "one call", script: ask(`{"name":"echo","arguments":{"x":1}}`), tools: &abi.ProcessTools{},
			want: []string{`{"text":"echo {\"x\":1}"}`}, calls: 1},
		{name: "a failing tool", script: ask(`{"name":"fail"}`), tools: &abi.ProcessTools{},
			want: []string{`{"text":"it failed","error":"tool"}`}, calls: 1},
		{name: "garbage", script: ask(`not json`) + ask(`{"name":"a","arguments":[1]}`) + ask(`{"name":"ok"}`), tools: &abi.ProcessTools{},
			want: []string{`"error":"invalid"`, `arguments must be an object`, `{"text":"ok "}`}, calls: 3},
		{name: "max calls", script: ask(`{"name":"a"}`) + ask(`{"name":"b"}`) + ask(`{"name":"c"}`), tools: &abi.ProcessTools{MaxCalls: 2},
			want: []string{`{"text":"a "}`, `{"text":"b "}`, `"error":"limit"`}, calls: 3},
		{name: "201 calls", script: `for i in $(seq 201); do printf '{"name":"n%d"}\n' $i >&3; IFS= read -r a <&4; done; printf '%s\n' "$a"`,
			tools: &abi.ProcessTools{}, want: []string{`made its 200 tool calls`}, calls: 201},
		{name: "a line too long", script: `head -c 2000000 /dev/zero | tr '\0' a >&3; IFS= read -r a <&4; printf '%s\n' "$a"; ` + ask(`{"name":"late"}`),
			tools: &abi.ProcessTools{}, want: []string{`the tool channel is closed`}, calls: 0},
		{name: "a big answer is cut", script: `printf '{"name":"big"}\n' >&3; IFS= read -r a <&4; printf '%d %s\n' ${#a} "${a: -40}"`, tools: &abi.ProcessTools{},
			want: []string{`8388647 xxxxxxxxxx\n... [cut at 8388608 bytes]"}`}, calls: 1},
		{name: "no channel asked for", script: `echo x >&3 2>/dev/null || echo no-fd-3`, want: []string{"no-fd-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, r, raw := e.spawn(t, toolGrant(true), tc.script, tc.tools, 30*time.Second)
			if code != abi.OK {
				t.Fatalf("spawn: %v %s", code, raw)
			}
			lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("stdout %q (stderr %q), want %d lines", r.Stdout, r.Stderr, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("line %d: %.200q, want it to contain %q", i, lines[i], w)
				}
			}
			if r.ToolCalls != tc.calls {
				t.Errorf("tool_calls %d, want %d", r.ToolCalls, tc.calls)
			}
		})
	}
	t.Run("steps and owner", func(t *testing.T) {
		e := newToolEnv(t)
		e.spawn(t, toolGrant(true), ask(`{"name":"a"}`)+ask(`{"name":"b"}`), &abi.ProcessTools{}, 30*time.Second)
		if len(e.calls) != 2 || e.calls[0].Step != 1 || e.calls[1].Step != 2 || e.calls[1].Owner != "alice" || e.calls[1].Plugin != "code" {
			t.Fatalf("calls %+v", e.calls)
		}
	})
}

// TestToolChannelRefusals: no tools grant, a negative max_calls.
func TestToolChannelRefusals(t *testing.T) {
	e := newToolEnv(t)
	if code, _, raw := e.spawn(t, toolGrant(false), "true", &abi.ProcessTools{}, time.Second); code != abi.Denied || !strings.Contains(raw, "no tools grant") {
		t.Errorf("without the grant: %v %s", code, raw)
	}
	if code, _, raw := e.spawn(t, toolGrant(true), "true", &abi.ProcessTools{MaxCalls: -1}, time.Second); code != abi.Invalid {
		t.Errorf("max_calls -1: %v %s", code, raw)
	}
	bare := hostfntest.Defs(New(proc.New(proc.Config{})))
	b, _ := json.Marshal(abi.ProcessSpawnRequest{Argv: []string{"true"}, Tools: &abi.ProcessTools{}})
	if code, raw := hostfntest.Call(context.Background(), bare["spawn"], &hostfn.Call{Grant: toolGrant(true)}, b); code != abi.Unavailable {
		t.Errorf("a family without a tool caller: %v %s", code, raw)
	}
}

// TestToolChannelTimeout: a program killed at its timeout while a call
// is under way: the call's context ends and spawn returns.
func TestToolChannelTimeout(t *testing.T) {
	e := newToolEnv(t)
	start := time.Now()
	code, r, raw := e.spawn(t, toolGrant(true), `printf '{"name":"block"}\n' >&3; read -r a <&4; echo "$a"`, &abi.ProcessTools{}, time.Second)
	if code != abi.OK || !r.TimedOut || r.ToolCalls != 1 {
		t.Fatalf("spawn: %v timed_out %v calls %d %s", code, r.TimedOut, r.ToolCalls, raw)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("spawn took %v", d)
	}
}

// TestToolChannelNeverRead: a program that floods requests and never
// reads an answer fills both pipes; it is killed at its timeout and the
// spawn returns, its calls counted.
func TestToolChannelNeverRead(t *testing.T) {
	e := newToolEnv(t)
	start := time.Now()
	code, r, raw := e.spawn(t, toolGrant(true), `while :; do printf '{"name":"x","arguments":{"pad":"%01000d"}}\n' 0 >&3; done`, &abi.ProcessTools{}, time.Second)
	if code != abi.OK || !r.TimedOut || r.ToolCalls == 0 {
		t.Fatalf("spawn: %v timed_out %v calls %d %.300s", code, r.TimedOut, r.ToolCalls, raw)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("spawn took %v", d)
	}
	if n := len(e.calls); n > abi.MaxToolCalls {
		t.Fatalf("%d calls made, at most %d", n, abi.MaxToolCalls)
	}
}
