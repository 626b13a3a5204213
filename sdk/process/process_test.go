//go:build !wasip1

package process_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aiodhq/aiod/sdk/process"
	"github.com/aiodhq/aiod/sdk/sdktest"
)

func setup(t *testing.T, commands []string, shell bool) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sdktest.New(t, sdktest.WithProcess(sdktest.Process{Commands: commands, Cwd: []string{root}, Shell: shell}))
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

// TestReadLines: a started program read by whole lines through the real
// process family, each line with the host's reading of its type; and
// EachLine refusing a response that is not in the index format.
func TestReadLines(t *testing.T) {
	setup(t, []string{"sh"}, false)
	p, err := process.Start(process.StartRequest{Argv: []string{"sh", "-c", `printf '{"type":"hit"}\nprose\n{"type":"sum'; sleep 0.1; printf 'mary"}'`}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		resp, err := p.ReadLines(0, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if resp == nil {
			break
		}
		if err := process.EachLine(resp, func(line, typ []byte, checked bool) bool {
			got = append(got, string(line)+"|"+string(typ)+"|"+map[bool]string{true: "checked", false: "unchecked"}[checked])
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Wait(false); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"type":"hit"}|hit|checked`, "prose||unchecked", `{"type":"summary"}|summary|checked`}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("lines %q, want %q", got, want)
	}
	for _, bad := range [][]byte{nil, {1, 0}, {9, 0, 0, 0}, {1, 0, 0, 0, 200, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'x'}} {
		if err := process.EachLine(bad, func([]byte, []byte, bool) bool { return true }); err == nil {
			t.Errorf("EachLine(%v): no error", bad)
		}
	}
}

// TestReadCollect: a read with collect answers the meta event, the
// error the plugin files (added back with the next read), the summary
// and the counts of the runs the host kept; WaitCollected keeps the
// collection, which AppendJSON writes as a marker the host replaces.
func TestReadCollect(t *testing.T) {
	setup(t, []string{"sh"}, false)
	p, err := process.Start(process.StartRequest{Argv: []string{"sh", "-c",
		`printf '{"type":"meta"}\n{"type":"hit","n":1}\n{"type":"error","scope":"item"}\n{"type":"hit","n":2}\n{"type":"hit","n":3}\n{"type":"summary","ok":true}\n'`}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var add []byte
	for {
		resp, err := p.ReadCollect(0, 5*time.Second, []string{"hit"}, add)
		if err != nil {
			t.Fatal(err)
		}
		add = nil
		if resp == nil {
			break
		}
		if err := process.EachEntry(resp, func(b, typ []byte, checked bool, n int, collected bool) bool {
			if collected {
				got = append(got, fmt.Sprintf("collected %d", n))
				return true
			}
			if string(typ) == "error" {
				add = append(add, b...)
			}
			got = append(got, string(b))
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{`{"type":"meta"}`, "collected 1", `{"type":"error","scope":"item"}`, "collected 2", `{"type":"summary","ok":true}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("entries %q, want %q", got, want)
	}
	res, col, err := p.WaitCollected(false)
	if err != nil || res.ExitCode != 0 {
		t.Fatal(res, err)
	}
	events := `{"type":"hit","n":1},{"type":"error","scope":"item"},{"type":"hit","n":2},{"type":"hit","n":3}`
	if col.Events != 4 || col.Bytes != len(events) {
		t.Fatalf("collection: %d events, %d bytes", col.Events, col.Bytes)
	}
	if m := col.AppendJSON(nil); len(m) < 4 || m[0] != 0 || m[1] != '0' || m[len(m)-1] != 0 {
		t.Fatalf("marker %q", m)
	}
	// a response that is not in the format, or a collected entry with
	// bytes, is an error, not a panic
	for _, bad := range [][]byte{nil, {1, 0, 0, 0}, {1, 0, 0, 0, 3, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1, 0, 0, 0, 'a', 'b', 'c'}} {
		if err := process.EachEntry(bad, func([]byte, []byte, bool, int, bool) bool { return true }); err == nil {
			t.Errorf("EachEntry(%v): no error", bad)
		}
	}
	// ReadRuns' walker refuses collected entries
	if err := process.EachRun([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1, 0, 0, 0}, func([]byte, []byte, bool, int) bool { return true }); err == nil {
		t.Error("EachRun took a collected entry")
	}
}
