package server

import (
	"testing"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
)

// TestCounters: the compact counter vector counts each label set apart
// and exposes only its declared labels.
func TestCounters(t *testing.T) {
	c := newCounters("aiod_test_total", "Test.", "tenant", "quota")
	// a label value is copied: the request's buffer it came from is reused
	buf := []byte("alice")
	c.inc(unsafe.String(&buf[0], len(buf)), "calls_per_minute", "", "")
	copy(buf, "XXXXX")
	for range 2 {
		c.inc("alice", "calls_per_minute", "", "")
	}
	c.inc("bob", "calls_per_minute", "", "")
	c.inc("alice", "concurrent_calls", "", "")
	// the series counted last is compared first: alternating series, and
	// one repeated, each count once a call
	for range 50 {
		c.inc("bob", "calls_per_minute", "", "")
		c.inc("bob", "concurrent_calls", "", "")
		c.inc("bob", "concurrent_calls", "", "")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 {
		t.Fatalf("gather: %v %v", mfs, err)
	}
	got := map[string]float64{}
	for _, m := range mfs[0].GetMetric() {
		k := ""
		for _, l := range m.GetLabel() {
			k += l.GetName() + "=" + l.GetValue() + " "
		}
		got[k] = m.GetCounter().GetValue()
	}
	want := map[string]float64{
		"quota=calls_per_minute tenant=alice ": 3,
		"quota=calls_per_minute tenant=bob ":   51,
		"quota=concurrent_calls tenant=bob ":   100,
		"quota=concurrent_calls tenant=alice ": 1,
	}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
	if n := len(c.names); n != 5 {
		t.Errorf("%d interned names, want 5 (alice, bob, two quotas, \"\")", n)
	}
}
