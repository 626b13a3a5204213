package proc

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func startSh(t *testing.T, ctx context.Context, m *Manager, script string, mod func(*SpawnRequest)) *Running {
	t.Helper()
	sh, err := lookIn("sh", DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	req := SpawnRequest{Path: sh, Args: []string{"sh", "-c", script}, Env: m.Config().BaseEnv, Dir: t.TempDir()}
	if mod != nil {
		mod(&req)
	}
	r, err := m.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readAll reads a started program's stdout to its end.
func readAll(t *testing.T, r *Running, max int) []byte {
	t.Helper()
	var out []byte
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		b, eof := r.Read(context.Background(), max, time.Second)
		if max > 0 && len(b) > max {
			t.Fatalf("Read returned %d bytes, max %d", len(b), max)
		}
		out = append(out, b...)
		if eof {
			return out
		}
	}
	t.Fatal("stdout did not end")
	return nil
}

// TestStart: a started program's stdout read in pieces, whole and in
// order, and the result of Wait; a writer faster than its reader is paced,
// not cut.
func TestStart(t *testing.T) {
	m := newManager(t, Config{})
	r := startSh(t, ctxT(t), m, `i=0; while [ $i -lt 20000 ]; do echo "line $i"; i=$((i+1)); done; echo err >&2; exit 3`, nil)
	out := readAll(t, r, 7000)
	var want bytes.Buffer
	for i := range 20000 {
		want.WriteString("line " + itoa(i) + "\n")
	}
	if !bytes.Equal(out, want.Bytes()) {
		t.Fatalf("stdout: %d bytes, want %d", len(out), want.Len())
	}
	res := r.Wait(false)
	if res.ExitCode != 3 || res.Killed != "" || string(res.Stderr) != "err\n" || res.StdoutBytes != int64(want.Len()) || res.StdoutTruncated {
		t.Fatalf("result: %+v", res)
	}
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	if i == 0 {
		return "0"
	}
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	return string(b[n:])
}

// TestStartOutputLimit: a program that floods stdout past MaxOutput is
// killed; the first MaxOutput bytes stay readable.
func TestStartOutputLimit(t *testing.T) {
	m := newManager(t, Config{})
	r := startSh(t, ctxT(t), m, `yes flood`, func(r *SpawnRequest) { r.MaxOutput = 100_000 })
	out := readAll(t, r, 1<<20)
	if len(out) != 100_000 || !strings.HasPrefix(string(out), "flood\nflood\n") {
		t.Fatalf("read %d bytes", len(out))
	}
	res := r.Wait(false)
	if res.Killed != ReasonOutputLimit || !res.StdoutTruncated || res.StdoutBytes != 100_000 {
		t.Fatalf("result: %+v", res)
	}
}

// TestStartEnds: the timeout kills a program nobody reads; Wait with kill
// stops one; the end of the starting context kills one and discards its
// output.
func TestStartEnds(t *testing.T) {
	m := newManager(t, Config{})
	t.Run("timeout", func(t *testing.T) {
		r := startSh(t, ctxT(t), m, `echo hi; exec sleep 60`, func(r *SpawnRequest) { r.Timeout = 300 * time.Millisecond })
		if out := readAll(t, r, 0); string(out) != "hi\n" {
			t.Fatalf("stdout %q", out)
		}
		if res := r.Wait(false); res.Killed != "timeout" || !res.TimedOut {
			t.Fatalf("result: %+v", res)
		}
	})
	// A paced writer, not yes: yes fills the default 1 MiB output bound in
	// tens of milliseconds, and the bound's kill can come before the one
	// asked for.
	const paced = `while :; do echo y; sleep 0.01; done`
	t.Run("wait kill", func(t *testing.T) {
		r := startSh(t, ctxT(t), m, paced, nil)
		if b, _ := r.Read(context.Background(), 10, 5*time.Second); len(b) == 0 {
			t.Fatal("nothing read")
		}
		t0 := time.Now()
		if res := r.Wait(true); res.Killed != ReasonStopped || time.Since(t0) > 5*time.Second {
			t.Fatalf("result: %+v after %s", res, time.Since(t0))
		}
	})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		r := startSh(t, ctx, m, paced, nil)
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Fatal("not ended with its context")
		}
		if res := r.Wait(false); res.Killed != "canceled" {
			t.Fatalf("result: %+v", res)
		}
	})
	t.Run("nothing yet", func(t *testing.T) {
		r := startSh(t, ctxT(t), m, `sleep 1; echo late`, nil)
		if b, eof := r.Read(context.Background(), 0, 50*time.Millisecond); len(b) != 0 || eof {
			t.Fatalf("read %q eof %v", b, eof)
		}
		if out := readAll(t, r, 0); string(out) != "late\n" {
			t.Fatalf("stdout %q", out)
		}
		if res := r.Wait(false); res.ExitCode != 0 || res.Killed != "" {
			t.Fatalf("result: %+v", res)
		}
	})
}

// TestStartPaced: a writer far faster than its reader is held at about
// streamHold unread bytes (it blocks on its writes), whatever the pieces
// it writes in, and loses nothing once read.
func TestStartPaced(t *testing.T) {
	m := newManager(t, Config{})
	const total = 4 << 20
	r := startSh(t, ctxT(t), m, `i=0; while [ $i -lt 64 ]; do head -c 65536 /dev/zero | tr '\0' a; i=$((i+1)); done`,
		func(r *SpawnRequest) { r.MaxOutput = 8 << 20 })
	// the writer fills the queue to about streamHold, then blocks (under
	// a loaded run it can take seconds to get there)
	var held int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r.qmu.Lock()
		held = len(r.q)
		r.qmu.Unlock()
		if held >= streamHold/2 || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(200 * time.Millisecond) // held at the bound, not past it
	r.qmu.Lock()
	held = len(r.q)
	r.qmu.Unlock()
	if held < streamHold/2 || held > streamHold+32<<10 || r.u.exited.Load() {
		t.Fatalf("unread: %d bytes held (exited %v), want about %d and the writer blocked", held, r.u.exited.Load(), streamHold)
	}
	out := readAll(t, r, 1<<20)
	if len(out) != total || strings.Trim(string(out), "a") != "" {
		t.Fatalf("read %d bytes, want %d", len(out), total)
	}
	if res := r.Wait(false); res.ExitCode != 0 || res.StdoutBytes != total {
		t.Fatalf("result: %+v", res)
	}
}
