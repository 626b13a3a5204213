package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		base, want  int
	}{
		{2 * mib, 16 * mib, 100, 701},          // goal 2 + 2*7.01 = 16.02 MiB
		{8 * mib, 16 * mib, 100, 100},          // GOGC's own goal is the floor
		{20 * mib, 16 * mib, 100, 100},         // above the floor: GOGC's
		{4 * mib, 16 * mib, 400, 400},          // GOGC=400's goal, 20 MiB, is higher
		{1, 16 * mib, 100, maxPercent},         // bounded
		{0, 16 * mib, 100, 100},                // nothing measured yet
		{2 * mib, 16 * mib, -1, -1},            // GOGC=off stays off
		{3 * mib, 16 * mib, 50, 434},           // 3 + 3*4.34 = 16.02 MiB
		{16*mib - 1, 16 * mib, 0, 1},           // GOGC=0 below the floor
		{100 * mib, 16 * mib, 100, 100},        // large heaps untouched
		{2 * mib, 0, 100, 100},                 // no floor
		{maxPercent * mib, 16 * mib, 100, 100}, // no overflow on a large heap
	} {
		got := Percent(c.live, c.floor, c.base)
		if got != c.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", c.live, c.floor, c.base, got, c.want)
		}
		if got > 0 && c.base >= 0 && c.live > 0 && got != maxPercent {
			if goal := c.live + c.live*uint64(got)/100; goal < c.floor && got != c.base {
				t.Errorf("Percent(%d, %d, %d) = %d: goal %d below the floor", c.live, c.floor, c.base, got, goal)
			}
		}
	}
}

// TestFloorRaisesGoal: with a floor well above the test's live heap, the
// collector's heap goal after a collection is at the floor; Stop gives the
// process its percentage back, and the goal falls to GOGC's again.
func TestFloorRaisesGoal(t *testing.T) {
	const floor = 64 << 20
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	f := Start(floor)
	waitGoal(t, func(goal uint64) bool { return goal >= floor*9/10 }, "at the floor")
	if p := gcPercent(); p <= 100 {
		t.Fatalf("GC percent %d under the floor, want above 100", p)
	}
	f.Stop()
	if p := gcPercent(); p != 100 {
		t.Fatalf("GC percent %d after Stop, want the process's 100", p)
	}
	waitGoal(t, func(goal uint64) bool { return goal < floor/2 }, "GOGC's again")
}

// TestFloorLeavesOffAlone: a process with the collector off keeps it off.
func TestFloorLeavesOffAlone(t *testing.T) {
	base := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(base)
	f := Start(64 << 20)
	runtime.GC()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent %d, want -1 (off)", p)
	}
	f.Stop()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent %d after Stop, want -1 (off)", p)
	}
}

// TestLargeHeapKeepsGOGC: a live heap above the floor is collected at
// GOGC's goal.
func TestLargeHeapKeepsGOGC(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	keep := make([][]byte, 0, 32)
	for range 32 {
		b := make([]byte, 1<<20)
		b[0] = 1
		keep = append(keep, b)
	}
	f := Start(8 << 20)
	defer f.Stop()
	runtime.GC()
	time.Sleep(50 * time.Millisecond) // the finalizer's tune
	runtime.GC()
	if p := gcPercent(); p != 100 {
		t.Fatalf("GC percent %d with a 32 MiB live heap and an 8 MiB floor, want 100", p)
	}
	runtime.KeepAlive(keep)
}

func waitGoal(t *testing.T, ok func(uint64) bool, what string) {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // the finalizer runs after the cycle
		metrics.Read(s)
		if ok(s[0].Value.Uint64()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("heap goal %d bytes, want it %s", s[0].Value.Uint64(), what)
		}
	}
}

func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
