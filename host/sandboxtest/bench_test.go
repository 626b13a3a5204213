package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Per-call latency of the built-ins against native baselines (issue 4 §5):
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
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := s.call(b, "sandbox_file_operations", map[string]any{"action": "read", "path": path})
		if r.IsError {
			b.Fatal(r.Text())
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
