package process

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
)

// The requests written by hand decode as encoding/json's encoding of the
// same request does (what the host reads is the same).
func TestMarshalRequests(t *testing.T) {
	in := "in<put>&\u2028"
	starts := []abi.ProcessStartRequest{
		{},
		{Argv: []string{}},
		{Argv: []string{"/bin/tool", "a b", `q"uote\`, "\x01\n", "é"}, Env: map[string]string{"B": "2", "A": "1 \"x\""}, Cwd: "/workspace/sub",
			Stdin: &in, TimeoutMs: 30000, MaxOutputBytes: 1 << 24, ClearEnv: true},
		{Argv: []string{"x"}, Stdin: new(string), TimeoutMs: -1},
	}
	for _, r := range starts {
		sameDecoding(t, marshalStart(r), r, new(abi.ProcessStartRequest), new(abi.ProcessStartRequest))
	}
	for _, r := range []abi.ProcessWaitRequest{{}, {ID: 3, Kill: true}, {ID: 1 << 40, KeepCollected: true}, {ID: -2, Kill: true, KeepCollected: true}} {
		sameDecoding(t, marshalWait(r), r, new(abi.ProcessWaitRequest), new(abi.ProcessWaitRequest))
	}
}

func sameDecoding(t testing.TB, got []byte, r any, a, b any) {
	t.Helper()
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, a); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal(want, b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s decodes to %+v, encoding/json's %s to %+v", got, a, want, b)
	}
}

func FuzzMarshalStart(f *testing.F) {
	f.Add("/bin/tool", "arg", "KEY", "value", "/workspace", "stdin", int64(5), int64(6), true, true)
	f.Add("", "\xff\"\\", "", "\x00", "", "", int64(-1), int64(0), false, false)
	f.Fuzz(func(t *testing.T, a0, a1, k, v, cwd, stdin string, timeout, maxOut int64, hasStdin, clear bool) {
		r := abi.ProcessStartRequest{Argv: []string{a0, a1}, Env: map[string]string{k: v, k + "2": v}, Cwd: cwd,
			TimeoutMs: timeout, MaxOutputBytes: maxOut, ClearEnv: clear}
		if hasStdin {
			r.Stdin = &stdin
		}
		sameDecoding(t, marshalStart(r), r, new(abi.ProcessStartRequest), new(abi.ProcessStartRequest))
	})
}
