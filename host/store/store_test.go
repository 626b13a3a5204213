package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/store"
	"github.com/aiodhq/aiod/host/store/bolt"
	"github.com/aiodhq/aiod/host/store/redis"
	"github.com/aiodhq/aiod/host/store/storetest"
)

var ctx = context.Background()

// onStores runs f over each implementation, each new and empty, holding
// at most max bytes.
func onStores(t *testing.T, max int64, f func(t *testing.T, s store.Store)) {
	t.Run("memory", func(t *testing.T) { f(t, store.NewMemory(max)) })
	t.Run("bolt", func(t *testing.T) {
		s, err := bolt.Open(t.TempDir(), max)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
	t.Run("redis", func(t *testing.T) {
		r := storetest.StartRedis(t)
		s, err := redis.Open(ctx, r.URL(), max)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
}

// must(f())(t) is f's value, the test failing at f's error.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestSpaces(t *testing.T) {
	onStores(t, 0, func(t *testing.T, s store.Store) {
		a := store.Space{Plugin: "p", Owner: "alice"}
		b := store.Space{Plugin: "p", Owner: "alice:x"} // no confusion of names
		q := store.Space{Plugin: "q", Owner: "alice"}
		if n := must(s.Set(ctx, a, "k/1", "one", 100))(t); n != 6 {
			t.Errorf("set: used %d", n)
		}
		must(s.Set(ctx, a, "k/2", "", 100))(t)
		must(s.Set(ctx, a, "j", "jay", 100))(t)
		must(s.Set(ctx, b, "k/1", "bee", 100))(t)
		if v, ok := must2(t)(s.Get(ctx, a, "k/1")); !ok || v != "one" {
			t.Errorf("get %q %v", v, ok)
		}
		if v, ok := must2(t)(s.Get(ctx, a, "k/2")); !ok || v != "" {
			t.Errorf("empty value: %q %v", v, ok)
		}
		if _, ok := must2(t)(s.Get(ctx, q, "k/1")); ok {
			t.Error("another plugin's space shows alice's key")
		}
		if v, _ := must2(t)(s.Get(ctx, b, "k/1")); v != "bee" {
			t.Errorf("alice:x's key: %q", v)
		}
		keys, more, err := s.List(ctx, a, "k/", "", 10)
		if err != nil || strings.Join(keys, ",") != "k/1,k/2" || more {
			t.Errorf("list prefix: %v %v %v", keys, more, err)
		}
		keys, more, _ = s.List(ctx, a, "", "", 2)
		if strings.Join(keys, ",") != "j,k/1" || !more {
			t.Errorf("list page: %v %v", keys, more)
		}
		keys, more, _ = s.List(ctx, a, "", "k/1", 2)
		if strings.Join(keys, ",") != "k/2" || more {
			t.Errorf("list after: %v %v", keys, more)
		}
		keys, _, _ = s.List(ctx, a, "k/", "a", 10)
		if strings.Join(keys, ",") != "k/1,k/2" {
			t.Errorf("list after below the prefix: %v", keys)
		}
		// over the space's limit: refused, nothing changed
		_, err = s.Set(ctx, a, "big", strings.Repeat("x", 100), 100)
		var tl *store.TooLargeError
		if !errors.As(err, &tl) || tl.Store != 0 || !strings.Contains(err.Error(), "max 100") {
			t.Errorf("too large: %v", err)
		}
		if _, ok := must2(t)(s.Get(ctx, a, "big")); ok {
			t.Error("a refused set stored its key")
		}
		if n := must(s.Usage(ctx, a))(t); n != 6+3+4 {
			t.Errorf("usage %d", n)
		}
		// overwriting counts the difference
		if n := must(s.Set(ctx, a, "k/1", "uno!", 100))(t); n != 14 {
			t.Errorf("overwrite: used %d", n)
		}
		if ok := must(s.Delete(ctx, a, "k/1"))(t); !ok {
			t.Error("delete: not there")
		}
		if ok := must(s.Delete(ctx, a, "k/1"))(t); ok {
			t.Error("delete again: there")
		}
		if n := must(s.Usage(ctx, a))(t); n != 7 {
			t.Errorf("usage after delete %d", n)
		}
		if _, err := s.Set(ctx, a, "", "x", 100); !errors.Is(err, store.ErrKey) {
			t.Errorf("empty key: %v", err)
		}
		if _, err := s.Set(ctx, a, strings.Repeat("k", 1025), "x", 1<<20); !errors.Is(err, store.ErrKey) {
			t.Errorf("long key: %v", err)
		}
		// binary-ish keys and values survive
		odd := "\x00\xff:\n"
		must(s.Set(ctx, store.Space{Plugin: "p", Owner: odd}, odd, odd, 100))(t)
		if v, _ := must2(t)(s.Get(ctx, store.Space{Plugin: "p", Owner: odd}, odd)); v != odd {
			t.Errorf("odd bytes: %q", v)
		}
	})
}

func must2(t *testing.T) func(string, bool, error) (string, bool) {
	return func(v string, ok bool, err error) (string, bool) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v, ok
	}
}

func TestStoreFull(t *testing.T) {
	onStores(t, 20, func(t *testing.T, s store.Store) {
		a, b := store.Space{Plugin: "p", Owner: "a"}, store.Space{Plugin: "p", Owner: "b"}
		must(s.Set(ctx, a, "k", strings.Repeat("v", 15), 1000))(t)
		_, err := s.Set(ctx, b, "k", "12345", 1000)
		var tl *store.TooLargeError
		if !errors.As(err, &tl) || tl.Store != 20 || !strings.Contains(err.Error(), "full") {
			t.Fatalf("store full: %v", err)
		}
		must(s.Delete(ctx, a, "k"))(t)
		must(s.Set(ctx, b, "k", "12345", 1000))(t)
	})
}

// TestConcurrentSets: sets from many goroutines to one space never pass
// its limit together (each set is atomic), and the usage adds up.
func TestConcurrentSets(t *testing.T) {
	onStores(t, 0, func(t *testing.T, s store.Store) {
		sp := store.Space{Plugin: "p", Owner: "o"}
		const limit = 500
		var wg sync.WaitGroup
		var mu sync.Mutex
		stored := 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 20 {
					_, err := s.Set(ctx, sp, fmt.Sprintf("%d/%02d", i, j), "xxxxxx", limit) // 10 bytes
					var tl *store.TooLargeError
					switch {
					case err == nil:
						mu.Lock()
						stored++
						mu.Unlock()
					case !errors.As(err, &tl):
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		if stored != limit/10 {
			t.Errorf("%d sets went through, want %d", stored, limit/10)
		}
		if n := must(s.Usage(ctx, sp))(t); n != limit {
			t.Errorf("usage %d, want %d", n, limit)
		}
	})
}

func TestRecords(t *testing.T) {
	onStores(t, 0, func(t *testing.T, s store.Store) {
		if err := s.PutRecord(ctx, "task/1", []byte(`{"a":1}`), time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.PutRecord(ctx, "task/short", []byte(`x`), 0); err != nil { // at least MinRecordTTL
			t.Fatal(err)
		}
		b, ok, err := s.GetRecord(ctx, "task/1")
		if err != nil || !ok || string(b) != `{"a":1}` {
			t.Fatalf("get: %s %v %v", b, ok, err)
		}
		if _, ok, _ := s.GetRecord(ctx, "task/2"); ok {
			t.Error("unknown record found")
		}
		if _, ok, _ := s.GetRecord(ctx, "task/short"); !ok {
			t.Error("a record went before MinRecordTTL")
		}
		time.Sleep(store.MinRecordTTL + 200*time.Millisecond)
		if _, ok, _ := s.GetRecord(ctx, "task/short"); ok {
			t.Error("an expired record is still there")
		}
		if _, ok, _ := s.GetRecord(ctx, "task/1"); !ok {
			t.Error("a live record went")
		}
	})
}

// TestAddRecord: a record is added only where none is live, and of
// concurrent adds exactly one wins, whose value every reader sees.
func TestAddRecord(t *testing.T) {
	onStores(t, 0, func(t *testing.T, s store.Store) {
		if ok := must(s.AddRecord(ctx, "k", []byte("first"), 0))(t); !ok {
			t.Fatal("the first add of an id did not add")
		}
		if ok := must(s.AddRecord(ctx, "k", []byte("second"), time.Minute))(t); ok {
			t.Fatal("an add over a live record added")
		}
		if b, ok, _ := s.GetRecord(ctx, "k"); !ok || string(b) != "first" {
			t.Fatalf("after a refused add: %q %v", b, ok)
		}
		time.Sleep(store.MinRecordTTL + 200*time.Millisecond)
		if ok := must(s.AddRecord(ctx, "k", []byte("third"), time.Minute))(t); !ok {
			t.Fatal("an add over an expired record did not add")
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if ok, err := s.AddRecord(ctx, "race", []byte(fmt.Sprint(i)), time.Minute); err != nil {
					t.Error(err)
				} else if ok {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d of 16 concurrent adds won, want 1", wins.Load())
		}
	})
}

// TestBoltReopen: what was acknowledged is there after the file is closed
// and opened again, usage and the store's total included.
func TestBoltReopen(t *testing.T) {
	dir := t.TempDir()
	s := must(bolt.Open(dir, 30))(t)
	sp := store.Space{Plugin: "p", Owner: "o"}
	must(s.Set(ctx, sp, "a", "0123456789", 1000))(t)
	must(s.Set(ctx, sp, "b", "0123456789", 1000))(t)
	must(s.Delete(ctx, sp, "b"))(t)
	must(s.Set(ctx, sp, "c", "01234", 1000))(t)
	if err := s.PutRecord(ctx, "r", []byte("rec"), time.Hour); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = must(bolt.Open(dir, 30))(t)
	defer s.Close()
	if v, ok := must2(t)(s.Get(ctx, sp, "a")); !ok || v != "0123456789" {
		t.Errorf("after reopen: %q %v", v, ok)
	}
	if _, ok := must2(t)(s.Get(ctx, sp, "b")); ok {
		t.Error("a deleted key came back")
	}
	if n := must(s.Usage(ctx, sp))(t); n != 11+6 {
		t.Errorf("usage after reopen %d", n)
	}
	// the store's total came back too: 17 of 30 used
	if _, err := s.Set(ctx, store.Space{Plugin: "p", Owner: "x"}, "k", strings.Repeat("v", 13), 1000); err == nil {
		t.Error("the store's bound was forgotten at reopen")
	}
	if b, ok, _ := s.GetRecord(ctx, "r"); !ok || string(b) != "rec" {
		t.Errorf("record after reopen: %q %v", b, ok)
	}
}

// TestBoltLocked: a second open of the same file (another aiod on the
// same --data-dir) is refused with a message that says so.
func TestBoltLocked(t *testing.T) {
	dir := t.TempDir()
	s := must(bolt.Open(dir, 0))(t)
	defer s.Close()
	start := time.Now()
	_, err := bolt.Open(dir, 0)
	if err == nil || !strings.Contains(err.Error(), "locked by another process") || !strings.Contains(err.Error(), filepath.Join(dir, bolt.FileName)) {
		t.Fatalf("second open: %v", err)
	}
	if d := time.Since(start); d > bolt.LockTimeout+2*time.Second {
		t.Errorf("the refusal took %s", d)
	}
}

// TestBoltDamaged: a file that is not a sound database is refused at
// open, saying it is damaged, never a panic.
func TestBoltDamaged(t *testing.T) {
	for name, damage := range map[string]func(path string) error{
		"garbage": func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("not a database ", 1000)), 0o600) },
		"truncated": func(p string) error {
			return os.Truncate(p, 4096+100)
		},
		"meta pages zeroed": func(p string) error {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt(make([]byte, 8192), 0)
			return err
		},
		"data pages overwritten": func(p string) error {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			st, _ := f.Stat()
			junk := []byte(strings.Repeat("\xde\xad\xbe\xef", 1024))
			for off := int64(2 * 4096); off < st.Size(); off += 4096 {
				if _, err := f.WriteAt(junk, off); err != nil {
					return err
				}
			}
			return nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := must(bolt.Open(dir, 0))(t)
			for i := range 200 {
				must(s.Set(ctx, store.Space{Plugin: "p", Owner: fmt.Sprint(i % 7)}, fmt.Sprint(i), strings.Repeat("v", 100), 1<<20))(t)
			}
			s.Close()
			if err := damage(filepath.Join(dir, bolt.FileName)); err != nil {
				t.Fatal(err)
			}
			s, err := bolt.Open(dir, 0)
			if err == nil {
				s.Close()
				t.Fatal("a damaged file opened")
			}
			if !strings.Contains(err.Error(), "is damaged") || !strings.Contains(err.Error(), "move it aside") {
				t.Errorf("message: %v", err)
			}
			t.Log(err)
		})
	}
}

// TestRedisDownAndBack: with the server stopped, operations fail at once
// (within the store's timeout) with an error that names the store; when
// it is back, the same client works again, with no restart, and what was
// acknowledged before is there (the server's append-only file).
func TestRedisDownAndBack(t *testing.T) {
	r := storetest.StartRedis(t)
	s := must(redis.Open(ctx, r.URL(), 0))(t)
	defer s.Close()
	sp := store.Space{Plugin: "p", Owner: "o"}
	must(s.Set(ctx, sp, "k", "before", 100))(t)
	r.Stop(t)
	start := time.Now()
	_, err := s.Set(ctx, sp, "k", "during", 100)
	var un *store.UnavailableError
	if !errors.As(err, &un) || !strings.Contains(err.Error(), "redis 127.0.0.1:"+r.Port) {
		t.Fatalf("set with the server down: %v", err)
	}
	if _, _, err := s.Get(ctx, sp, "k"); !errors.As(err, &un) {
		t.Fatalf("get with the server down: %v", err)
	}
	if d := time.Since(start); d > 3*redis.Timeout {
		t.Errorf("failing took %s", d)
	}
	r.Start(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, ok, err := s.Get(ctx, sp, "k")
		if err == nil {
			if !ok || v != "before" {
				t.Fatalf("after the restart: %q %v", v, ok)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reconnection: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(s.Set(ctx, sp, "k", "after", 100))(t)
}

// TestRedisOpenRefused: a server that does not answer, or a URL that is
// not one, is an error at open that names it.
func TestRedisOpenRefused(t *testing.T) {
	r := storetest.StartRedis(t)
	r.Stop(t)
	if _, err := redis.Open(ctx, r.URL(), 0); err == nil || !strings.Contains(err.Error(), "does not answer") || !strings.Contains(err.Error(), r.Addr()) {
		t.Errorf("down: %v", err)
	}
	for _, u := range []string{"http://127.0.0.1:1", "redis://127.0.0.1:1/notanumber", "redis://u:secretpw@127.0.0.1:1/x"} {
		_, err := redis.Open(ctx, u, 0)
		if err == nil {
			t.Errorf("%s opened", u)
		} else if strings.Contains(err.Error(), "secretpw") {
			t.Errorf("the password is in the message: %v", err)
		}
	}
}

// TestRedisTake: two clients (two replicas) share one bucket: together
// they get the burst and no more, and a refusal says how long to wait.
func TestRedisTake(t *testing.T) {
	r := storetest.StartRedis(t)
	a := must(redis.Open(ctx, r.URL(), 0))(t)
	b := must(redis.Open(ctx, r.URL(), 0))(t)
	defer a.Close()
	defer b.Close()
	granted := 0
	for i := range 20 {
		c := a
		if i%2 == 1 {
			c = b
		}
		ok, wait, err := c.Take(ctx, "acme", 6, 3) // 0.1/s, burst 3
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			granted++
		} else if wait < 5*time.Second || wait > 11*time.Second {
			t.Errorf("retry after %s, want about 10 s", wait)
		}
	}
	if granted != 3 {
		t.Errorf("%d tokens granted across both clients, want the burst (3)", granted)
	}
	if ok, _, _ := a.Take(ctx, "other", 6, 3); !ok {
		t.Error("another tenant's bucket is not its own")
	}
}

// BenchmarkSet: one set of a 16-byte key and a 64-byte value, one
// goroutine, over each store (bolt: a transaction fsynced; redis: one
// script round trip on loopback). BENCHMARKS.md, "Plugin state".
func BenchmarkSet(b *testing.B) {
	stores := map[string]func(b *testing.B) store.Store{
		"memory": func(*testing.B) store.Store { return store.NewMemory(0) },
		"bolt": func(b *testing.B) store.Store {
			s, err := bolt.Open(b.TempDir(), 0)
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		"redis": func(b *testing.B) store.Store {
			r := storetest.StartRedis(b)
			s, err := redis.Open(ctx, r.URL(), 0)
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
	}
	for _, name := range []string{"memory", "bolt", "redis"} {
		b.Run(name+"/parallel-16", func(b *testing.B) {
			s := stores[name](b)
			defer s.Close()
			v := strings.Repeat("v", 64)
			var n atomic.Int64
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				sp := store.Space{Plugin: "p", Owner: fmt.Sprint(n.Add(1))}
				for i := 0; pb.Next(); i++ {
					if _, err := s.Set(ctx, sp, fmt.Sprintf("key-%011d", i%1000), v, 1<<20); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		b.Run(name, func(b *testing.B) {
			s := stores[name](b)
			defer s.Close()
			sp := store.Space{Plugin: "p", Owner: "o"}
			v := strings.Repeat("v", 64)
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Set(ctx, sp, fmt.Sprintf("key-%011d", i%1000), v, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRedisSlow: a server that stops answering (DEBUG SLEEP) fails an
// operation within the store's timeout, naming the store, and the same
// client works again once it answers.
func TestRedisSlow(t *testing.T) {
	r := storetest.StartRedis(t)
	s := must(redis.Open(ctx, r.URL(), 0))(t)
	defer s.Close()
	sp := store.Space{Plugin: "p", Owner: "o"}
	must(s.Set(ctx, sp, "k", "v", 100))(t)
	r.Stall(t, 4*time.Second)
	time.Sleep(100 * time.Millisecond) // the server is asleep
	start := time.Now()
	_, err := s.Set(ctx, sp, "k", "slow", 100)
	took := time.Since(start)
	var un *store.UnavailableError
	if !errors.As(err, &un) || !strings.Contains(err.Error(), "redis "+r.Addr()) {
		t.Fatalf("set against a stalled server: %v", err)
	}
	if took > redis.Timeout+time.Second {
		t.Errorf("the failure took %s, past the %s timeout", took, redis.Timeout)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := s.Set(ctx, sp, "k", "awake", 100); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the server woke, the client did not: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v, _ := must2(t)(s.Get(ctx, sp, "k")); v != "awake" {
		t.Errorf("after the stall: %q", v)
	}
}
