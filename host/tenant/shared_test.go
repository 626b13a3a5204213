package tenant

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/store"
	"github.com/aiodhq/aiod/host/store/redis"
	"github.com/aiodhq/aiod/host/store/storetest"
)

// TestSharedRateQuota: two Sets (two replicas) sharing one real
// redis-server take one tenant's calls_per_minute from one bucket:
// together they admit its burst and no more. With the server stopped, each
// admits from its own bucket (calls keep working) and says why; with it
// back, the shared bucket counts again.
func TestSharedRateQuota(t *testing.T) {
	r := storetest.StartRedis(t)
	tenants := map[string]caps.Tenant{"acme": {Keys: []string{"k-acme-0123456789"}, Quotas: caps.Quotas{CallsPerMinute: 12}}} // burst 2, one every 5 s
	var errs atomic.Int64
	var sets []*Set
	for range 2 {
		s, err := redis.Open(context.Background(), r.URL(), 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		set := New(tenants, "")
		set.Share(s, func(err error) {
			var un *store.UnavailableError
			if !errors.As(err, &un) {
				t.Errorf("shared bucket error: %v", err)
			}
			errs.Add(1)
		})
		sets = append(sets, set)
	}
	acme := func(i int) *Tenant { tn, _ := sets[i].Lookup("acme"); return tn }
	for i := range 2 {
		if _, e := acme(i).Admit(); e != nil {
			t.Fatalf("replica %d, first call: %v", i, e)
		}
	}
	for i := range 2 {
		_, e := acme(i).Admit()
		if e == nil || e.Quota != QuotaCallsPerMinute || e.RetryAfter <= 0 {
			t.Errorf("replica %d after the burst was spent on both: %v", i, e)
		}
	}
	// a reload keeps the sharing
	sets[0].Update(tenants, "")
	if _, e := acme(0).Admit(); e == nil {
		t.Error("after a reload, replica 0 admitted beyond the shared bucket")
	}
	r.Stop(t)
	for i := range 2 {
		if _, e := acme(i).Admit(); e != nil {
			t.Errorf("replica %d with the server down: %v (its own bucket admits)", i, e)
		}
	}
	if errs.Load() == 0 {
		t.Error("the unreachable bucket was not reported")
	}
	r.Start(t)
	if _, e := acme(1).Admit(); e == nil {
		t.Error("with the server back, the spent shared bucket admitted again at once")
	}
}
