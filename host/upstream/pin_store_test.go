package upstream

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/store"
	"github.com/aiodhq/aiod/host/store/redis"
	"github.com/aiodhq/aiod/host/store/storetest"
)

// TestStoredPins: two replicas' sets keep their pins in one real Redis
// (--store): the pin file seeds the store once; a tool accepted through
// one replica is listed by the other within its refresh; the file is not
// read again; pins in the store that do not parse keep the last good ones.
func TestStoredPins(t *testing.T) {
	ctx := context.Background()
	up := newSDKUpstream(t, true, "echo", "rich")
	srv := Server{Name: "sdk", URL: up.url(), Prefix: "p"}
	r := storetest.StartRedis(t)
	open := func() store.Store {
		s, err := redis.Open(ctx, r.URL(), 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	plain := newSet(t, Options{}, srv)
	defs, _, err := plain.ServerTools(ctx, "sdk")
	if err != nil || len(defs) != 2 {
		t.Fatalf("ServerTools: %d %v", len(defs), err)
	}
	// the operator's file pins echo only; it seeds the empty store
	seed := filepath.Join(t.TempDir(), "pins.json")
	f, _ := LoadPins(seed)
	if err := f.Accept("sdk", defs[:1]); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	st1, st2 := open(), open()
	p1, err := NewStoredPins(store.Pins{St: st1}, seed)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p1.Path(), "redis "+r.Addr()) {
		t.Errorf("Path: %q, want the store named", p1.Path())
	}
	// the file changes after seeding: the store, not the file, decides
	if err := os.WriteFile(seed, []byte(`{"version":1,"servers":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p2, err := NewStoredPins(store.Pins{St: st2}, seed)
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := newSet(t, Options{Pins: p1}, srv), newSet(t, Options{Pins: p2}, srv)
	for i, s := range []*Set{s1, s2} {
		if got := names(s.Tools(ctx)); len(got) != 1 || got[0] != "p_echo" {
			t.Fatalf("replica %d lists %v, want the seeded pin's p_echo only", i+1, got)
		}
	}
	// rich accepted through replica 1 (review --accept, or the admin page)
	if err := p1.Accept("sdk", defs); err != nil {
		t.Fatal(err)
	}
	if err := p1.Save(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for got := names(s2.Tools(ctx)); len(got) != 2; got = names(s2.Tools(ctx)) {
		if time.Now().After(deadline) {
			t.Fatalf("replica 2 lists %v 5 s after replica 1 accepted rich", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// a third replica starting now reads the store's pins, not the file's
	p3, err := NewStoredPins(store.Pins{St: open()}, seed)
	if err != nil {
		t.Fatal(err)
	}
	if ch, _ := p3.Review("sdk", defs); len(ch) != 0 {
		t.Fatalf("a replica started later reviews %+v, want the accepted pins", ch)
	}
	// garbage in the store: refused at start, kept aside while running
	if err := (store.Pins{St: st1}).PutPins(ctx, []byte("not json")); err != nil {
		t.Fatal(err)
	}
	if _, err := NewStoredPins(store.Pins{St: st1}, ""); err == nil || !strings.Contains(err.Error(), "redis "+r.Addr()) {
		t.Fatalf("pins that do not parse: %v, want an error naming the store", err)
	}
	time.Sleep(1100 * time.Millisecond)
	if got := names(s2.Tools(ctx)); len(got) != 2 {
		t.Fatalf("after the store's pins stopped parsing, replica 2 lists %v, want the last good pins", got)
	}
	// the store away: start refused naming it
	r.Stop(t)
	if _, err := NewStoredPins(store.Pins{St: st1}, ""); err == nil || !strings.Contains(err.Error(), r.Addr()) {
		t.Fatalf("with the store down: %v, want an error naming it", err)
	}
}
