package sandboxtest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Per-call latency of the built-ins against native baselines:
// make bench prints the ratios. Each tool call goes over real HTTP through
// the host, the plugin and its host functions.

func oneMiBFile(b *testing.B) string {
	dir, err := os.MkdirTemp("/tmp", "aiod-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "1mib.txt")
	line := strings.Repeat("abcdefghij", 9) + "\n" // 91 bytes of text a line
	if err := os.WriteFile(path, []byte(strings.Repeat(line, (1<<20)/len(line)+1)[:1<<20]), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

func BenchmarkFileRead1MiB(b *testing.B) {
	s := sharedServer(b, "")
	path := oneMiBFile(b)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "sandbox_file_operations", "arguments": map[string]any{"action": "read", "path": path}}})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// the raw exchange: what a client pays, without this harness's checks
		status, out := s.post(b, body)
		if status != 200 || len(out) < 1<<20 || bytes.Contains(out, []byte(`"isError":true`)) {
			b.Fatalf("status %d, %d bytes: %.200s", status, len(out), out)
		}
	}
}

func BenchmarkNativeReadFile1MiB(b *testing.B) {
	path := oneMiBFile(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if data, err := os.ReadFile(path); err != nil || len(data) != 1<<20 {
			b.Fatal(err)
		}
	}
}

func BenchmarkBashEchoHi(b *testing.B) {
	s := sharedServer(b, "")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := s.call(b, "sandbox_execute_bash", map[string]any{"cmd": "echo hi"})
		if r.IsError || !strings.Contains(r.Text(), "hi") {
			b.Fatal(r.Text())
		}
	}
}

func BenchmarkNativeBashEchoHi(b *testing.B) {
	for i := 0; i < b.N; i++ {
		out, err := exec.Command("bash", "-c", "echo hi").Output()
		if err != nil || string(out) != "hi\n" {
			b.Fatal(err)
		}
	}
}
