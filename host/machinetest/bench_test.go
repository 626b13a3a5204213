package machinetest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"testing"
)

// A Machine Mode call's overhead over running the same command directly
// (make bench): docs_many emits N hits; the call goes over
// real HTTP (a legacy request without a session) through the host, the
// adapter and the process family; the native run is the command with its
// stdout read whole.

func benchCall(b *testing.B, n int) {
	f := shared(b)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "docs_many", "arguments": map[string]any{"count": n}}})
	want := []byte(`"count":` + strconv.Itoa(n) + `,"ok":true`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest("POST", f.url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(out, want) || bytes.Contains(out, []byte(`"isError":true`)) {
			b.Fatalf("status %d: %.300s", resp.StatusCode, out)
		}
	}
}

func benchNative(b *testing.B, n int) {
	_, docs := built(b)
	want := []byte(`"count":` + strconv.Itoa(n) + `,"ok":true`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := exec.Command(docs, "docs", "many", "--count="+strconv.Itoa(n), "--output", "jsonl").Output()
		if err != nil || !bytes.Contains(out, want) {
			b.Fatalf("%v: %.300s", err, out)
		}
	}
}

func BenchmarkMachineCall10(b *testing.B)      { benchCall(b, 10) }
func BenchmarkMachineCall10000(b *testing.B)   { benchCall(b, 10000) }
func BenchmarkNativeMachine10(b *testing.B)    { benchNative(b, 10) }
func BenchmarkNativeMachine10000(b *testing.B) { benchNative(b, 10000) }
