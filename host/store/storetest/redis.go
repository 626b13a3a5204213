// Package storetest runs a real redis-server for the tests of the shared
// store (host/store/redis) and of replicas sharing it (host/e2e).
package storetest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Redis is one redis-server on a loopback port, with its data (an
// append-only file fsynced at every write) in a directory of the test.
type Redis struct {
	Port string
	dir  string
	bin  string
	cmd  *exec.Cmd
	done chan struct{}
}

// URL is the --store URL of the server.
func (r *Redis) URL() string { return "redis://127.0.0.1:" + r.Port + "/0" }

// Addr is host:port.
func (r *Redis) Addr() string { return "127.0.0.1:" + r.Port }

// RedisServer finds redis-server (Debian's): the test fails in CI
// without it (.ci/run installs it) and is skipped elsewhere.
func RedisServer(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"redis-server", "/usr/bin/redis-server"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("redis-server is missing: .ci/run installs Debian's redis-server")
	}
	t.Skip("redis-server is missing: apt-get install redis-server")
	return ""
}

// StartRedis starts a redis-server on a free loopback port and stops it
// when the test ends.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	r := &Redis{Port: port, dir: t.TempDir(), bin: RedisServer(t)}
	r.Start(t)
	t.Cleanup(func() { r.Stop(t) })
	return r
}

// Start (re)starts the server on its port, over its data.
func (r *Redis) Start(t testing.TB) {
	t.Helper()
	if r.cmd != nil {
		t.Fatal("redis-server is running already")
	}
	r.cmd = exec.Command(r.bin, "--port", r.Port, "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no", "--logfile", "",
		"--enable-debug-command", "local") // Stall

	out, err := os.Create(r.dir + "/redis.log")
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout, r.cmd.Stderr = out, out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.done = make(chan struct{})
	go func() { _ = r.cmd.Wait(); out.Close(); close(r.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if r.ping() {
			return
		}
		select {
		case <-r.done:
			b, _ := os.ReadFile(r.dir + "/redis.log")
			t.Fatalf("redis-server exited at start:\n%s", b)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("redis-server did not answer PING within 10 s")
}

// Stop stops the server (SIGTERM, then SIGKILL after 5 s).
func (r *Redis) Stop(t testing.TB) {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	r.cmd = nil
}

// Stall makes the server answer nothing for d (DEBUG SLEEP): a slow
// server, not a gone one.
func (r *Redis) Stall(t testing.TB, d time.Duration) {
	t.Helper()
	c, err := net.DialTimeout("tcp", r.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(c, "DEBUG SLEEP %.3f\r\n", d.Seconds()); err != nil {
		t.Fatal(err)
	}
	go func() { // the answer comes when it wakes
		_ = c.SetDeadline(time.Now().Add(d + 10*time.Second))
		_, _ = bufio.NewReader(c).ReadString('\n')
		c.Close()
	}()
}

func (r *Redis) ping() bool {
	c, err := net.DialTimeout("tcp", r.Addr(), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}
