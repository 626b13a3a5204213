package process

import (
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/hostfntest"
	"github.com/aiodhq/aiod/sdk/abi"

	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/proc"
)

func grantProcess(commands, cwd []string, shell bool) *caps.Grant {
	scope := &abi.ProcessScope{Commands: commands, Cwd: cwd, Shell: shell}
	p := &caps.Policy{Default: &abi.Capabilities{Process: scope}}
	m := &abi.Manifest{Name: "t", Capabilities: abi.Capabilities{Process: scope}}
	return p.Allow(m, caps.Env{Tmp: os.TempDir()})
}

type procEnv struct {
	root, sub, out string
	defs           map[string]hostfn.Def
}

// newProcEnv makes root/sub, outside, root/escape -> outside and
// root/sh, a copy of sh that no grant allows.
func newProcEnv(t *testing.T) *procEnv {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &procEnv{root: base + "/root", sub: base + "/root/sub", out: base + "/outside"}
	os.MkdirAll(e.sub, 0o755)
	os.MkdirAll(e.out, 0o755)
	os.Symlink(e.out, e.root+"/escape")
	os.Symlink(e.sub, base+"/inlink")
	sh, err := os.ReadFile("/bin/sh")
	if err == nil {
		os.WriteFile(e.root+"/sh", sh, 0o755)
	}
	m := proc.New(proc.Config{})
	t.Cleanup(func() { m.Close() })
	e.defs = hostfntest.Defs(New(m))
	return e
}

func (e *procEnv) call(t *testing.T, c *hostfn.Call, name string, req any) (abi.Code, map[string]any) {
	t.Helper()
	raw, ok := req.(string)
	if !ok {
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	code, resp := hostfntest.Call(context.Background(), e.defs[name], c, []byte(raw))
	var m map[string]any
	if err := json.Unmarshal(resp, &m); err != nil {
		t.Fatalf("%s: response %q: %v", name, resp, err)
	}
	return code, m
}

func TestProcessDefs(t *testing.T) {
	f := New(proc.New(proc.Config{}))
	if f.Name() != abi.FamilyProcess {
		t.Errorf("name %q", f.Name())
	}
	var names []string
	for _, d := range f.Defs() {
		names = append(names, d.Name)
		if d.Module != "aiod:process" || len(d.Params) != 2 || d.Params[0] != hostfn.I32 || d.Params[1] != hostfn.I32 || len(d.Results) != 1 || d.Results[0] != hostfn.I64 {
			t.Errorf("%s: bad signature %+v", d.Name, d)
		}
	}
	if got := strings.Join(names, ","); got != "spawn,shell_exec,shell_close,which,start,read,wait" {
		t.Errorf("functions %s", got)
	}
}

func TestProcessSpawn(t *testing.T) {
	e := newProcEnv(t)
	shOnly := &hostfn.Call{Plugin: "p", Owner: "o", Grant: grantProcess([]string{"sh", "no-such-program-aiod"}, []string{e.root}, false)}
	anyProg := &hostfn.Call{Plugin: "p", Owner: "o", Grant: grantProcess([]string{"*"}, []string{e.root}, false)}
	noGrant := &hostfn.Call{Plugin: "p", Grant: (&caps.Policy{}).Allow(&abi.Manifest{Name: "p"}, caps.Env{})}
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		c       *hostfn.Call
		req     any
		code    abi.Code
		msg     string         // substring of the error message
		want    map[string]any // fields of a successful response
		wantOut string
	}{
		{name: "stdin env cwd", c: shOnly,
			req:  abi.ProcessSpawnRequest{Argv: []string{"sh", "-c", `cat; echo "$FOO"; pwd; exit 3`}, Stdin: str("in\n"), Env: map[string]string{"FOO": "bar"}, Cwd: e.sub},
			want: map[string]any{"exit_code": 3.0, "timed_out": false, "killed": "", "signal": "", "cwd": e.sub, "stderr": ""}, wantOut: "in\nbar\n" + e.sub + "\n"},
		{name: "default cwd is the first root", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"sh", "-c", "pwd"}},
			want: map[string]any{"exit_code": 0.0, "cwd": e.root}, wantOut: e.root + "\n"},
		{name: "absolute path of a granted program", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"/bin/sh", "-c", "echo hi"}},
			want: map[string]any{"exit_code": 0.0}, wantOut: "hi\n"},
		{name: "cwd through a symlink that stays inside", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"sh", "-c", "pwd"}, Cwd: filepath.Dir(e.root) + "/inlink"},
			want: map[string]any{"cwd": e.sub}, wantOut: e.sub + "\n"},
		{name: "timeout", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"sh", "-c", "echo started; sleep 30"}, TimeoutMs: 300},
			want: map[string]any{"timed_out": true, "killed": "timeout", "signal": "SIGKILL", "exit_code": -1.0}, wantOut: "started\n"},
		{name: "any program with *", c: anyProg, req: abi.ProcessSpawnRequest{Argv: []string{"echo", "any"}}, wantOut: "any\n"},
		{name: "LD_PRELOAD allowed with *", c: anyProg, req: abi.ProcessSpawnRequest{Argv: []string{"sh", "-c", "echo ok"}, Env: map[string]string{"LD_PRELOAD": ""}}, wantOut: "ok\n"},

		{name: "program not granted", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"cat"}}, code: abi.Denied, msg: "not in the granted commands"},
		{name: "granted name elsewhere", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{e.root + "/sh", "-c", "true"}}, code: abi.Denied, msg: "not in the granted commands"},
		{name: "PATH cannot redirect a granted name", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"sh", "-c", "pwd"}, Env: map[string]string{"PATH": e.root}},
			wantOut: e.root + "\n"},
		{name: "cwd outside", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"sh"}, Cwd: e.out}, code: abi.Denied, msg: "outside the granted directories"},
		{name: "cwd symlink pointing outside", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"sh"}, Cwd: e.root + "/escape"}, code: abi.Denied, msg: "resolves to " + e.out},
		{name: "cwd dotdot outside", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"sh"}, Cwd: e.root + "/../outside"}, code: abi.Denied},
		{name: "missing cwd outside", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"sh"}, Cwd: e.out + "/nope"}, code: abi.Denied},
		{name: "missing cwd inside", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"sh"}, Cwd: e.root + "/nope"}, code: abi.NotFound},
		{name: "relative cwd", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"sh"}, Cwd: "sub"}, code: abi.Invalid},
		{name: "LD_PRELOAD refused", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"sh"}, Env: map[string]string{"LD_PRELOAD": "/x.so"}}, code: abi.Denied, msg: "LD_PRELOAD"},
		{name: "granted but missing program", c: shOnly, req: abi.ProcessSpawnRequest{Argv: []string{"no-such-program-aiod"}}, code: abi.NotFound},
		{name: "empty argv", c: shOnly, req: abi.ProcessSpawnRequest{}, code: abi.Invalid, msg: "argv is required"},
		{name: "unknown field", c: shOnly, req: `{"argv":["sh"],"cmd":"x"}`, code: abi.Invalid, msg: "unknown field"},
		{name: "not an object", c: shOnly, req: `["sh"]`, code: abi.Invalid},
		{name: "field name in the wrong case", c: shOnly, req: `{"ARGV":["sh"]}`, code: abi.Invalid, msg: `unknown field "ARGV"`},
		{name: "duplicate field", c: shOnly, req: `{"argv":["no-such-program-aiod"],"argv":["sh"]}`, code: abi.Invalid, msg: `duplicate field "argv"`},
		{name: "no process grant", c: noGrant, req: abi.ProcessSpawnRequest{Argv: []string{"sh"}}, code: abi.Denied, msg: "no process grant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, resp := e.call(t, tt.c, "spawn", tt.req)
			if code != tt.code {
				t.Fatalf("code %v, want %v: %v", code, tt.code, resp)
			}
			if code != abi.OK {
				if resp["code"] != code.String() || !strings.Contains(resp["message"].(string), tt.msg) {
					t.Errorf("error %v, want message containing %q", resp, tt.msg)
				}
				return
			}
			if resp["stdout"] != tt.wantOut {
				t.Errorf("stdout %q, want %q", resp["stdout"], tt.wantOut)
			}
			for k, v := range tt.want {
				if resp[k] != v {
					t.Errorf("%s = %v, want %v", k, resp[k], v)
				}
			}
		})
	}
}

func TestProcessShell(t *testing.T) {
	e := newProcEnv(t)
	g := grantProcess([]string{"*"}, []string{e.root}, true)
	alice := &hostfn.Call{Plugin: "p", Owner: "alice", Grant: g}
	bob := &hostfn.Call{Plugin: "p", Owner: "bob", Grant: g}
	other := &hostfn.Call{Plugin: "q", Owner: "alice", Grant: g}
	noShell := &hostfn.Call{Plugin: "p", Owner: "alice", Grant: grantProcess([]string{"*"}, []string{e.root}, false)}
	type step struct {
		name string
		c    *hostfn.Call
		fn   string
		req  any
		code abi.Code
		want map[string]any
	}
	steps := []step{
		{name: "no shell grant", c: noShell, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "true"}, code: abi.Denied},
		{name: "no shell grant close", c: noShell, fn: "shell_close", req: abi.ProcessShellCloseRequest{}, code: abi.Denied},
		{name: "cmd required", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{}, code: abi.Invalid, want: map[string]any{"message": "cmd is required"}},
		{name: "starts in the first root", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "pwd"},
			want: map[string]any{"status": "completed", "output": e.root + "\n", "exit_code": 0.0, "cwd": e.root, "session": "default", "reason": ""}},
		{name: "cd persists", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "cd sub; X=1"}, want: map[string]any{"cwd": e.sub}},
		{name: "state kept", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "echo $X; pwd"}, want: map[string]any{"output": "1\n" + e.sub + "\n"}},
		{name: "other owner", c: bob, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "echo ${X-none}; pwd"}, want: map[string]any{"output": "none\n" + e.root + "\n"}},
		{name: "other plugin", c: other, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "echo ${X-none}"}, want: map[string]any{"output": "none\n"}},
		{name: "cwd sync", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "pwd", Cwd: e.root}, want: map[string]any{"output": e.root + "\n", "cwd": e.root}},
		{name: "cwd outside", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "pwd", Cwd: e.out}, code: abi.Denied},
		{name: "cwd escaping symlink", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "pwd", Cwd: e.root + "/escape"}, code: abi.Denied},
		{name: "exit", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "exit 5"}, want: map[string]any{"status": "completed", "exit_code": 5.0}},
		{name: "after exit", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "echo $X"}, want: map[string]any{"output": "1\n"}},
		{name: "timeout", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "sleep 30", TimeoutMs: 300},
			want: map[string]any{"status": "hard_timeout", "exit_code": nil, "reason": "timeout"}},
		{name: "output cap", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "printf 0123456789", MaxOutputBytes: 4},
			want: map[string]any{"output": "0123", "truncated": true}},
		{name: "named session", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Session: "work", Cmd: "Y=2"}, want: map[string]any{"session": "work"}},
		{name: "named session state", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Session: "work", Cmd: "echo $Y ${X-none}"}, want: map[string]any{"output": "2 none\n"}},
		{name: "new session resets a named one", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Session: "work", NewSession: true, Cmd: "echo ${Y-none}"}, want: map[string]any{"output": "none\n", "session": "work"}},
		{name: "new anonymous session", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{NewSession: true, Cmd: "echo ${X-none}"}, want: map[string]any{"output": "none\n"}},
		{name: "default session untouched", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "echo $X"}, want: map[string]any{"output": "1\n"}},
		{name: "close", c: alice, fn: "shell_close", req: abi.ProcessShellCloseRequest{}, want: map[string]any{"closed": true}},
		{name: "close again", c: alice, fn: "shell_close", req: abi.ProcessShellCloseRequest{}, want: map[string]any{"closed": false}},
		{name: "fresh after close", c: alice, fn: "shell_exec", req: abi.ProcessShellExecRequest{Cmd: "echo ${X-none}"}, want: map[string]any{"output": "none\n"}},
		{name: "unknown field", c: alice, fn: "shell_exec", req: `{"command":"true"}`, code: abi.Invalid},
		{name: "field name in the wrong case", c: alice, fn: "shell_exec", req: `{"Cmd":"true"}`, code: abi.Invalid},
	}
	for _, st := range steps {
		code, resp := e.call(t, st.c, st.fn, st.req)
		if code != st.code {
			t.Fatalf("%s: code %v, want %v: %v", st.name, code, st.code, resp)
		}
		for k, v := range st.want {
			if got, ok := resp[k]; !ok || got != v {
				t.Errorf("%s: %s = %#v, want %#v (response %v)", st.name, k, got, v, resp)
			}
		}
		if st.name == "new anonymous session" && !strings.HasPrefix(resp["session"].(string), "new-") {
			t.Errorf("anonymous new session named %v", resp["session"])
		}
	}
}

func TestProcessWhich(t *testing.T) {
	e := newProcEnv(t)
	c := &hostfn.Call{Plugin: "p", Grant: grantProcess([]string{"sh", "no-such-program-aiod"}, []string{e.root}, false)}
	code, resp := e.call(t, c, "which", abi.ProcessWhichRequest{Names: []string{"sh", "cat", "no-such-program-aiod"}})
	if code != abi.OK {
		t.Fatal(resp)
	}
	b, _ := json.Marshal(resp["programs"])
	var progs []abi.ProcessWhichProgram
	json.Unmarshal(b, &progs)
	if len(progs) != 3 || !strings.HasSuffix(progs[0].Path, "/sh") || !progs[0].Allowed ||
		progs[1] != (abi.ProcessWhichProgram{Name: "cat"}) || progs[2] != (abi.ProcessWhichProgram{Name: "no-such-program-aiod", Allowed: true}) {
		t.Errorf("which: %+v", progs)
	}
}

func TestCallTimeout(t *testing.T) {
	cfg := proc.Config{DefaultTimeout: 30 * time.Second, MaxTimeout: time.Minute}
	bg := context.Background()
	short, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	tests := []struct {
		ctx      context.Context
		ms       int64
		min, max time.Duration
	}{
		{bg, 0, 30 * time.Second, 30 * time.Second},
		{bg, 1500, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{bg, 3_600_000, time.Minute, time.Minute},
		{short, 0, 4 * time.Second, 4500 * time.Millisecond}, // ends before the call's deadline
		{short, 100, 100 * time.Millisecond, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		if d := callTimeout(tt.ctx, tt.ms, cfg); d < tt.min || d > tt.max {
			t.Errorf("callTimeout(%d ms) = %v, want [%v, %v]", tt.ms, d, tt.min, tt.max)
		}
	}
}
