//go:build !wasip1

package process_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/proc"
	"github.com/aiodhq/aiod/sdk/internal/abi"
	"github.com/aiodhq/aiod/sdk/process"
)

type mem []byte

func (m mem) Read(off, n uint32) ([]byte, bool) {
	if uint64(off)+uint64(n) > uint64(len(m)) {
		return nil, false
	}
	return m[off : off+n], true
}

func (m mem) Write(off uint32, b []byte) bool {
	if uint64(off)+uint64(len(b)) > uint64(len(m)) {
		return false
	}
	copy(m[off:], b)
	return true
}

// host runs the real aiod:process family behind the native fake host, so
// the SDK's requests meet the host's strict decoding.
type host struct {
	call *hostfn.Call
	defs map[string]hostfn.Def
	rr   hostfn.Def
}

func (h *host) WriteOutput([]byte)                {}
func (h *host) Log(int, string)                   {}
func (h *host) Progress(float64, float64, string) {}

func (h *host) Call(module, name string, req []byte) ([]byte, uint32) {
	d, ok := h.defs[name]
	if module != process.Module || !ok {
		return []byte(`{"code":"unavailable","message":"no such function"}`), uint32(hostfn.Unavailable)
	}
	m := append(mem(nil), req...)
	stack := []uint64{0, uint64(len(req))}
	d.Fn(context.Background(), h.call, m, stack)
	code, n := uint32(stack[0]>>32), uint32(stack[0])
	if n == 0 {
		return nil, code
	}
	out := make(mem, n)
	h.rr.Fn(context.Background(), h.call, out, []uint64{0})
	return out, code
}

func setup(t *testing.T, commands []string, shell bool) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	scope := &caps.ProcessScope{Commands: commands, Cwd: []string{root}, Shell: shell}
	p := &caps.Policy{Default: &caps.Capabilities{Process: scope}}
	g := p.Allow(&caps.Manifest{Name: "t", Capabilities: caps.Capabilities{Process: scope}}, caps.Env{Tmp: os.TempDir()})
	m := proc.New(proc.Config{})
	t.Cleanup(func() { m.Close() })
	h := &host{call: &hostfn.Call{Plugin: "t", Owner: "o", Grant: g}, defs: map[string]hostfn.Def{}}
	for _, d := range hostfn.NewProcess(m).Defs() {
		h.defs[d.Name] = d
	}
	for _, d := range hostfn.Core().Defs() {
		if d.Name == "response_read" {
			h.rr = d
		}
	}
	t.Cleanup(abi.SetNativeHost(h))
	return root
}

func TestSpawn(t *testing.T) {
	root := setup(t, []string{"sh"}, false)
	res, err := process.Spawn(process.SpawnRequest{Argv: []string{"sh", "-c", `cat; echo "$A" >&2; pwd; exit 2`}, Stdin: "in\n", Env: map[string]string{"A": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "in\n"+root+"\n" || res.Stderr != "b\n" || res.ExitCode != 2 || res.Cwd != root || res.TimedOut {
		t.Errorf("result %+v", res)
	}
	res, err = process.Spawn(process.SpawnRequest{Argv: []string{"sh", "-c", "sleep 10"}, Timeout: 200 * time.Millisecond})
	if err != nil || !res.TimedOut || res.Signal != "SIGKILL" || res.Duration < 200*time.Millisecond {
		t.Errorf("timeout: %+v %v", res, err)
	}
	_, err = process.Run("cat")
	var pe *process.Error
	if !errors.Is(err, process.ErrDenied) || !errors.As(err, &pe) || pe.Code != "denied" {
		t.Errorf("denied program: %v", err)
	}
	if _, err = process.Spawn(process.SpawnRequest{Argv: []string{"sh"}, Cwd: "/"}); !errors.Is(err, process.ErrDenied) {
		t.Errorf("denied cwd: %v", err)
	}
	if _, err = process.Run(); !errors.Is(err, process.ErrInvalid) {
		t.Errorf("empty argv: %v", err)
	}
	progs, err := process.Which("sh", "cat")
	if err != nil || len(progs) != 2 || progs[0].Path == "" || !progs[0].Allowed || progs[1].Allowed {
		t.Errorf("which: %+v %v", progs, err)
	}
	if _, err := process.ShellExec(process.ShellRequest{Cmd: "true"}); !errors.Is(err, process.ErrDenied) {
		t.Errorf("shell without grant: %v", err)
	}
}

func TestShell(t *testing.T) {
	root := setup(t, []string{"*"}, true)
	os.Mkdir(root+"/d", 0o755)
	res, err := process.ShellExec(process.ShellRequest{Cmd: "cd d; export X=1; echo hi"})
	if err != nil || res.Status != process.StatusCompleted || res.Output != "hi\n" || *res.ExitCode != 0 || res.Cwd != root+"/d" || res.Session != "default" {
		t.Fatalf("first: %+v %v", res, err)
	}
	res, err = process.ShellExec(process.ShellRequest{Cmd: "echo $X; exit 3"})
	if err != nil || res.Output != "1\n" || *res.ExitCode != 3 {
		t.Errorf("second: %+v %v", res, err)
	}
	res, err = process.ShellExec(process.ShellRequest{Cmd: "sleep 10", Timeout: 200 * time.Millisecond})
	if err != nil || res.Status != process.StatusHardTimeout || res.ExitCode != nil || res.Reason != "timeout" {
		t.Errorf("timeout: %+v %v", res, err)
	}
	res, err = process.ShellExec(process.ShellRequest{NewSession: true, Cmd: "echo ${X-none}"})
	if err != nil || res.Output != "none\n" || res.Session == "default" {
		t.Errorf("new session: %+v %v", res, err)
	}
	if ok, err := process.ShellClose(""); !ok || err != nil {
		t.Errorf("close: %v %v", ok, err)
	}
	if _, err := process.ShellExec(process.ShellRequest{}); !errors.Is(err, process.ErrInvalid) {
		t.Errorf("no cmd: %v", err)
	}
}
