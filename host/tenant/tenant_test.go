package tenant

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/plugin"
)

func key(s string) string { return caps.KeyLine(sha256.Sum256([]byte(s))) }

func testSet() *Set {
	return New(map[string]caps.Tenant{
		"alice": {Keys: []string{key("a1"), key("a2")}, Tools: []string{"echo", "sandbox_*"}, Upstreams: []string{"peer"}, Browser: true,
			Quotas: caps.Quotas{ConcurrentCalls: 2}},
		"bob":   {Keys: []string{key("b1")}, Tools: []string{"echo"}, Quotas: caps.Quotas{CallsPerMinute: 6}},
		"carol": {Keys: []string{key("c1")}},
	}, "api")
}

func TestAuthenticate(t *testing.T) {
	s := testSet()
	for k, want := range map[string]string{"a1": "alice", "a2": "alice", "b1": "bob", "c1": "carol", "api": plugin.DefaultOwner, "nope": "", "": "",
		key("a1"): ""} { // the digest itself is not a key
		got, ok := s.Authenticate(k)
		if (want == "") == ok || (ok && got.Name != want) {
			t.Errorf("Authenticate(%q) = %v, %v; want %q", k, got, ok, want)
		}
	}
	if d, _ := s.Authenticate("api"); !d.Unrestricted {
		t.Error("the API key's tenant must be unrestricted")
	}
	if !s.HasKeys() || !s.Restricted() {
		t.Error("HasKeys/Restricted")
	}
	if New(nil, "").HasKeys() {
		t.Error("no keys configured, yet HasKeys")
	}
}

func TestLookup(t *testing.T) {
	s := testSet()
	if _, ok := s.Lookup("mallory"); ok {
		t.Error("a policy with tenants must not invent one")
	}
	open := New(nil, "")
	if tt, ok := open.Lookup("zoe"); !ok || !tt.Unrestricted {
		t.Error("without tenants in the policy, an OAuth subject is an unrestricted tenant of its own")
	}
	if _, ok := open.Lookup("../etc"); ok {
		t.Error("a name that is not a tenant name must be refused")
	}
	if s.ForOwner("mallory").Allowed("echo") {
		t.Error("an unknown owner must be allowed nothing")
	}
}

func TestConcurrencyQuota(t *testing.T) {
	s := testSet()
	alice, _ := s.Lookup("alice")
	r1, e1 := alice.Admit()
	r2, e2 := alice.Admit()
	if e1 != nil || e2 != nil {
		t.Fatalf("two slots of two: %v %v", e1, e2)
	}
	_, e3 := alice.Admit()
	if e3 == nil || e3.Quota != QuotaConcurrentCalls || e3.RetryAfterSeconds() < 1 {
		t.Fatalf("third call: %v, want the concurrent_calls quota", e3)
	}
	r1()
	r1() // idempotent: must not free a second slot
	if _, e := alice.Admit(); e != nil {
		t.Fatalf("after a release: %v", e)
	}
	if _, e := alice.Admit(); e == nil {
		t.Fatal("a double release freed two slots")
	}
	r2()
}

// TestAdmitRate: a task-control request takes no concurrency slot (it
// passes a tenant whose slots are all held, and holds none itself) but
// does spend the rate bucket.
func TestAdmitRate(t *testing.T) {
	s := testSet()
	alice, _ := s.Lookup("alice")
	r1, _ := alice.Admit()
	r2, _ := alice.Admit()
	for i := range 3 {
		rel, e := alice.AdmitRate()
		if e != nil {
			t.Fatalf("poll %d with every slot held: %v", i, e)
		}
		rel()
		rel()
	}
	if _, e := alice.Admit(); e == nil {
		t.Fatal("AdmitRate's release freed a slot it never took")
	}
	r1()
	r2()
	bob, _ := s.Lookup("bob")
	if _, e := bob.AdmitRate(); e != nil { // burst: 1
		t.Fatal(e)
	}
	if _, e := bob.AdmitRate(); e == nil || e.Quota != QuotaCallsPerMinute {
		t.Fatalf("second poll at once: %v, want calls_per_minute", e)
	}
}

func TestRateQuota(t *testing.T) {
	s := testSet()
	bob, _ := s.Lookup("bob")
	if _, e := bob.Admit(); e != nil { // burst: 6/6 = 1
		t.Fatal(e)
	}
	_, e := bob.Admit()
	if e == nil || e.Quota != QuotaCallsPerMinute || e.RetryAfterSeconds() < 9 || e.RetryAfterSeconds() > 10 {
		t.Fatalf("second call at once: %v, want calls_per_minute with Retry-After 10 s", e)
	}
	// A reload that keeps bob's quotas keeps his empty bucket.
	s.Update(map[string]caps.Tenant{"bob": {Keys: []string{key("b1")}, Tools: []string{"echo"}, Quotas: caps.Quotas{CallsPerMinute: 6}}}, "")
	bob2, _ := s.Lookup("bob")
	if _, e := bob2.Admit(); e == nil {
		t.Fatal("a reload reset the bucket")
	}
	if _, ok := s.Authenticate("api"); ok {
		t.Fatal("the reload removed the API key, yet it still opens")
	}
}

// TestQuotaIsolation: a tenant at its quota, with requests refused and
// held, never delays another tenant's admission.
func TestQuotaIsolation(t *testing.T) {
	s := testSet()
	alice, _ := s.Lookup("alice")
	carol, _ := s.Lookup("carol")
	var held []func()
	for range 2 {
		r, _ := alice.Admit()
		held = append(held, r)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 { // alice hammers her full quota
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					if _, e := alice.Admit(); e == nil {
						t.Error("alice got past her quota")
					}
				}
			}
		}()
	}
	var worst time.Duration
	for range 1000 {
		start := time.Now()
		r, e := carol.Admit()
		if e != nil {
			t.Fatalf("carol refused: %v", e)
		}
		r()
		worst = max(worst, time.Since(start))
	}
	close(stop)
	wg.Wait()
	for _, r := range held {
		r()
	}
	if worst > 50*time.Millisecond {
		t.Fatalf("carol's admission took up to %v while alice was at her quota", worst)
	}
}

func TestFilterList(t *testing.T) {
	s := testSet()
	alice, _ := s.Lookup("alice")
	res := json.RawMessage(`{"tools":[{"name":"echo"},{"name":"sandbox_execute_bash"},{"name":"secret"}],"ttlMs":0}`)
	out, err := filterList(res, "tools", "name", alice.Allowed)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tools []struct{ Name string }
		TTL   *int `json:"ttlMs"`
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got.Tools) != 2 || got.Tools[1].Name != "sandbox_execute_bash" || got.TTL == nil {
		t.Fatalf("filtered: %s (%v)", out, err)
	}
}

// fakeCat records what reaches it.
type fakeCat struct{ calls []string }

func (f *fakeCat) Snapshot() *mcp.Snapshot    { return nil }
func (f *fakeCat) OnSwap(func(*mcp.Snapshot)) {}
func (f *fakeCat) ok(n string) ([]byte, error) {
	f.calls = append(f.calls, n)
	return []byte(`{}`), nil
}
func (f *fakeCat) CallTool(_ context.Context, r plugin.CallRequest) ([]byte, error) {
	return f.ok(r.Name)
}
func (f *fakeCat) GetPrompt(_ context.Context, r plugin.CallRequest) ([]byte, error) {
	return f.ok(r.Name)
}
func (f *fakeCat) ReadResource(_ context.Context, r plugin.CallRequest) ([]byte, error) {
	return f.ok(r.Name)
}
func (f *fakeCat) Complete(_ context.Context, r plugin.CallRequest) ([]byte, error) {
	return f.ok("complete")
}

// TestCatalogHides: a name the tenant may not use is answered exactly as
// a missing one, and never reaches the catalogue.
func TestCatalogHides(t *testing.T) {
	s := testSet()
	inner := &fakeCat{}
	c := s.Catalog(inner)
	ctx := context.Background()
	for _, tc := range []struct {
		call func() error
		want error
	}{
		{func() error {
			_, err := c.CallTool(ctx, plugin.CallRequest{Owner: "bob", Name: "sandbox_execute_bash"})
			return err
		}, plugin.ErrUnknownTool},
		{func() error { _, err := c.GetPrompt(ctx, plugin.CallRequest{Owner: "bob", Name: "p"}); return err }, plugin.ErrUnknownPrompt},
		{func() error {
			_, err := c.ReadResource(ctx, plugin.CallRequest{Owner: "carol", Name: "skill://x"})
			return err
		}, plugin.ErrUnknownResource},
		{func() error {
			_, err := c.Complete(ctx, plugin.CallRequest{Owner: "bob", Args: []byte(`{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}}`)})
			return err
		}, plugin.ErrUnknownPrompt},
		{func() error {
			_, err := c.CallTool(ctx, plugin.CallRequest{Owner: "mallory", Name: "echo"})
			return err
		}, plugin.ErrUnknownTool},
	} {
		if err := tc.call(); !errors.Is(err, tc.want) {
			t.Errorf("got %v, want %v", err, tc.want)
		}
	}
	if len(inner.calls) != 0 {
		t.Fatalf("hidden names reached the catalogue: %v", inner.calls)
	}
	for _, owner := range []string{"bob", "", plugin.DefaultOwner} {
		if _, err := c.CallTool(ctx, plugin.CallRequest{Owner: owner, Name: "echo"}); err != nil {
			t.Errorf("owner %q calling echo: %v", owner, err)
		}
	}
	if len(inner.calls) != 3 {
		t.Fatalf("allowed calls: %v", inner.calls)
	}
}

// BenchmarkAuthenticate1000 is the cost of resolving a key against 1,000
// tenants (its digest looked up among theirs).
func BenchmarkAuthenticate1000(b *testing.B) {
	ts := map[string]caps.Tenant{}
	for i := range 1000 {
		ts[fmt.Sprintf("t%d", i)] = caps.Tenant{Keys: []string{key(fmt.Sprintf("k%d", i))}}
	}
	s := New(ts, "")
	for b.Loop() {
		if _, ok := s.Authenticate("k500"); !ok {
			b.Fatal("no match")
		}
	}
}
