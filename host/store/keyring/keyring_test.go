package keyring_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/store"
	"github.com/aiodhq/aiod/host/store/bolt"
	"github.com/aiodhq/aiod/host/store/keyring"
	"github.com/aiodhq/aiod/host/store/redis"
	"github.com/aiodhq/aiod/host/store/storetest"
)

var ctx = context.Background()

// Replicas starting at once on one real Redis read one ring: the same
// sealing key, and the next epoch's key known to all before any seals
// with it.
func TestReplicasShareTheRing(t *testing.T) {
	r := storetest.StartRedis(t)
	now := time.Date(2026, 12, 6, 23, 59, 0, 0, time.UTC)
	rings := make([][][]byte, 8)
	var wg sync.WaitGroup
	for i := range rings {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := redis.Open(ctx, r.URL(), 0)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			if rings[i], err = keyring.Keys(ctx, s, now); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, ring := range rings {
		if len(ring) != 2 { // no previous epoch's key: the ring is new
			t.Fatalf("replica %d: %d keys, want the current and the next", i, len(ring))
		}
		for j := range ring {
			if !bytes.Equal(ring[j], rings[0][j]) || len(ring[j]) != keyring.KeyBytes {
				t.Fatalf("replica %d's key %d differs from replica 0's", i, j)
			}
		}
	}
	if bytes.Equal(rings[0][0], rings[0][1]) {
		t.Fatal("the next epoch's key is the current one")
	}
	// two minutes later the epoch has turned: the next key seals, the
	// old one still opens (a state sealed before midnight)
	s, err := redis.Open(ctx, r.URL(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	later, err := keyring.Keys(ctx, s, now.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(later) != 3 || !bytes.Equal(later[0], rings[0][1]) || !bytes.Equal(later[2], rings[0][0]) {
		t.Fatalf("after the epoch turned: want the former next key sealing and the former current one opening, got %d keys", len(later))
	}
}

// With --data-dir the ring is in the file: the keys are the same after
// the store is closed and opened again (a requestState outlives a
// restart).
func TestRingOutlivesRestart(t *testing.T) {
	dir := t.TempDir()
	read := func() [][]byte {
		s, err := bolt.Open(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		k, err := keyring.Keys(ctx, s, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a, b := read(), read()
	if len(a) < 2 || !bytes.Equal(a[0], b[0]) || !bytes.Equal(a[1], b[1]) {
		t.Fatal("the ring changed across a reopen of the file")
	}
}

// A key of the wrong size in the store (damaged, or written by something
// else) is refused, not used.
func TestBadKeyRefused(t *testing.T) {
	m := store.NewMemory(0)
	now := time.Now()
	id := "mrtr-key/" + strconv.FormatInt(now.UnixMilli()/keyring.Epoch.Milliseconds(), 10)
	if err := m.PutRecord(ctx, id, []byte("short"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := keyring.Keys(ctx, m, now); err == nil {
		t.Fatal("a 5-byte key was accepted")
	}
}

// The store away: Keys fails, naming the store.
func TestStoreDown(t *testing.T) {
	r := storetest.StartRedis(t)
	s, err := redis.Open(ctx, r.URL(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r.Stop(t)
	_, err = keyring.Keys(ctx, s, time.Now())
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(r.Addr())) {
		t.Fatalf("with the server stopped: %v, want an error naming it", err)
	}
}

// Keep reads the ring again and again: the keys it sets are the ring's;
// a ring that stops reading (a damaged key) is reported, and the keys set
// before are not replaced.
func TestKeep(t *testing.T) {
	m := store.NewMemory(0)
	want, err := keyring.Keys(ctx, m, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	kctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sets, fails := make(chan [][]byte, 100), make(chan error, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		keyring.Keep(kctx, m, 10*time.Millisecond, func(k [][]byte) error { sets <- k; return nil }, func(err error) { fails <- err })
	}()
	select {
	case got := <-sets:
		if len(got) != len(want) || !bytes.Equal(got[0], want[0]) {
			t.Fatal("Keep set other keys than the ring's")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Keep did not read the ring")
	}
	id := "mrtr-key/" + strconv.FormatInt(time.Now().UnixMilli()/keyring.Epoch.Milliseconds(), 10)
	if err := m.PutRecord(ctx, id, []byte("damaged"), time.Hour); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-fails:
		if !strings.Contains(err.Error(), "7 bytes") {
			t.Fatalf("fail: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a damaged ring was not reported")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Keep did not end with its context")
	}
	for len(sets) > 0 {
		if k := <-sets; !bytes.Equal(k[0], want[0]) {
			t.Fatal("a damaged ring's keys were set")
		}
	}
}
