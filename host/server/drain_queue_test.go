package server

import (
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestQueueListenerStop: connections the kernel completed while nobody
// accepted are not reset by the stop: Accept hands out every one, each
// still carrying what its client sent and able to answer, then reports
// the listener closed; a connection opened after the stop is refused.
func TestQueueListenerStop(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the queue is taken with accept4 (Linux)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	q := &queueListener{Listener: ln}
	const n = 5
	var clients []net.Conn
	for i := range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	time.Sleep(50 * time.Millisecond) // the handshakes done: all queued
	if err := q.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Fatal("a connection after the stop was accepted")
	}
	got := map[byte]net.Conn{}
	for range n {
		c, err := q.Accept()
		if err != nil {
			t.Fatalf("Accept after the stop: %v with %d of %d queued connections handed out", err, len(got), n)
		}
		b := make([]byte, 1)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatalf("a queued connection lost what its client sent: %v", err)
		}
		got[b[0]] = c
		if _, err := c.Write([]byte{b[0] - 'a' + 'A'}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept once the queue is empty: %v, want net.ErrClosed", err)
	}
	for i, c := range clients {
		b := make([]byte, 1)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c, b); err != nil || b[0] != byte('A'+i) {
			t.Fatalf("client %d: %q %v (reset by the stop?)", i, b, err)
		}
	}
	for _, c := range got {
		c.Close()
	}
}
