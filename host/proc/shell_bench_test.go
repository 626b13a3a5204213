package proc

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkShellEchoHi is `echo hi` in a warm session, beside
// BenchmarkBashCEchoHi, spawning `bash -c 'echo hi'` (the target: within
// 1.5x).
func BenchmarkShellEchoHi(b *testing.B) {
	m := New(Config{})
	defer m.Close()
	key := Key{Session: "bench"}
	ctx := context.Background()
	for b.Loop() {
		res, err := m.Exec(ctx, key, "echo hi", "", 10*time.Second, ExecOptions{StartDir: os.TempDir()})
		if err != nil || res.Status != StatusCompleted || string(res.Output) != "hi\n" {
			b.Fatal(res, err)
		}
	}
}

func BenchmarkBashCEchoHi(b *testing.B) {
	for b.Loop() {
		out, err := exec.Command("bash", "-c", "echo hi").Output()
		if err != nil || string(out) != "hi\n" {
			b.Fatal(string(out), err)
		}
	}
}
