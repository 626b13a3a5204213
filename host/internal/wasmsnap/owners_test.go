package wasmsnap

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/runtime"
)

// fakeInst is an instance of fakeEngine: how it was made ("scratch",
// "captured", or "restored N" from snapshot N).
type fakeInst struct {
	how    string
	closed atomic.Bool
}

func (i *fakeInst) Call(context.Context, *hostfn.Call, string, ...uint64) (int32, error) {
	return 0, nil
}

func (i *fakeInst) Close(context.Context) error { i.closed.Store(true); return nil }

// fakeSnap is a snapshot of fakeEngine.
type fakeSnap struct {
	id       int
	released atomic.Int32
}

// fakeEngine records what the table asks of it. Its captures answer with
// next in turn (nil: a snapshot), each from the gateFrom-th on (counting
// from 0) after waiting for gate when there is one; its restore waits for
// restGate when there is one.
type fakeEngine struct {
	mu       sync.Mutex
	log      []string
	notices  []string
	snaps    []*fakeSnap
	next     []error // the captures' answers in turn: errFail, errRefuse or nil
	captures int     // started
	gate     chan struct{}
	gateFrom int
	inCap    chan struct{} // told when a capture starts (if not nil)
	restGate chan struct{}
	inRest   chan struct{} // told when a restore starts (if not nil)
	restErr  error
}

var (
	errFail   = errors.New("instantiation failed")
	errRefuse = errors.New("refused")
)

func (e *fakeEngine) record(s string) {
	e.mu.Lock()
	e.log = append(e.log, s)
	e.mu.Unlock()
}

func (e *fakeEngine) logged() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.log)
}

func (e *fakeEngine) Instantiate(context.Context) (runtime.Instance, error) {
	e.record("scratch")
	return &fakeInst{how: "scratch"}, nil
}

func (e *fakeEngine) Capture(ctx context.Context) (runtime.Instance, *fakeSnap, error) {
	if e.inCap != nil {
		e.inCap <- struct{}{}
	}
	e.mu.Lock()
	gate := e.gate
	if e.captures < e.gateFrom {
		gate = nil
	}
	e.captures++
	e.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			e.record("capture stopped")
			return nil, nil, ctx.Err()
		}
	}
	e.mu.Lock()
	var err error
	if len(e.next) > 0 {
		err, e.next = e.next[0], e.next[1:]
	}
	e.log = append(e.log, "capture")
	e.mu.Unlock()
	switch err {
	case errFail:
		return nil, nil, err
	case errRefuse:
		return &fakeInst{how: "scratch"}, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	snap := &fakeSnap{id: len(e.snaps)}
	e.snaps = append(e.snaps, snap)
	return &fakeInst{how: "captured"}, snap, nil
}

func (e *fakeEngine) Restore(_ context.Context, snap *fakeSnap) (runtime.Instance, error) {
	if e.inRest != nil {
		e.inRest <- struct{}{}
	}
	if e.restGate != nil {
		<-e.restGate
	}
	if snap.released.Load() != 0 {
		panic("restore from a released snapshot")
	}
	e.record(fmt.Sprintf("restore %d", snap.id))
	if e.restErr != nil {
		return nil, e.restErr
	}
	return &fakeInst{how: fmt.Sprintf("restored %d", snap.id)}, nil
}

func (e *fakeEngine) notice(s string) {
	e.mu.Lock()
	e.notices = append(e.notices, s)
	e.mu.Unlock()
}

func (e *fakeEngine) released() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []int
	for _, s := range e.snaps {
		if n := s.released.Load(); n > 0 {
			out = append(out, s.id)
		}
		if n := s.released.Load(); n > 1 {
			panic(fmt.Sprintf("snapshot %d released %d times", s.id, n))
		}
	}
	return out
}

func newTable(opts Options[*fakeSnap]) *Owners[*fakeSnap] {
	opts.Release = func(s *fakeSnap) { s.released.Add(1) }
	return NewOwners(opts)
}

// TestOwners: the table's transitions, step by step. Each step makes an
// instance for an owner ("forget X" forgets X, "close" closes the table)
// and says how the instance was made; the engine's log of what it was
// asked, the snapshots released and the notices follow.
func TestOwners(t *testing.T) {
	type step struct {
		do   string // an owner, "forget X" or "close"
		how  string // the instance's making ("" for forget and close)
		fail bool   // the instantiation fails
	}
	for _, tc := range []struct {
		name     string
		opts     Options[*fakeSnap]
		next     []error
		restErr  error
		steps    []step
		log      []string
		released []int
		notices  int
	}{
		{
			name:  "first captures, later restore",
			steps: []step{{do: "a", how: "captured"}, {do: "a", how: "restored 0"}, {do: "a", how: "restored 0"}},
			log:   []string{"capture", "restore 0", "restore 0"},
		},
		{
			name:  "owners apart",
			steps: []step{{do: "a", how: "captured"}, {do: "b", how: "captured"}, {do: "b", how: "restored 1"}, {do: "a", how: "restored 0"}},
			log:   []string{"capture", "capture", "restore 1", "restore 0"},
		},
		{
			name:  "a failed instantiation: the next tries again",
			next:  []error{errFail},
			steps: []step{{do: "a", fail: true}, {do: "a", how: "captured"}, {do: "a", how: "restored 0"}},
			log:   []string{"capture", "capture", "restore 0"},
		},
		{
			name:    "refused: one notice, every later instance from scratch",
			next:    []error{errRefuse},
			steps:   []step{{do: "a", how: "scratch"}, {do: "a", how: "scratch"}, {do: "b", how: "scratch"}},
			log:     []string{"capture", "scratch", "scratch"},
			notices: 1,
		},
		{
			name:     "refused after a capture: instances from scratch, the snapshot kept",
			next:     []error{nil, errRefuse},
			steps:    []step{{do: "a", how: "captured"}, {do: "b", how: "scratch"}, {do: "a", how: "scratch"}, {do: "c", how: "scratch"}},
			log:      []string{"capture", "capture", "scratch", "scratch"},
			notices:  1,
			released: nil,
		},
		{
			name:     "forget: released, the next captures again",
			steps:    []step{{do: "a", how: "captured"}, {do: "forget a"}, {do: "forget a"}, {do: "forget x"}, {do: "a", how: "captured"}, {do: "a", how: "restored 1"}},
			log:      []string{"capture", "capture", "restore 1"},
			released: []int{0},
		},
		{
			name:     "close: every snapshot released, instances from scratch",
			steps:    []step{{do: "a", how: "captured"}, {do: "b", how: "captured"}, {do: "close"}, {do: "a", how: "scratch"}, {do: "c", how: "scratch"}, {do: "close"}},
			log:      []string{"capture", "capture", "scratch", "scratch"},
			released: []int{0, 1},
		},
		{
			name:  "reshare: the first instance is restored",
			opts:  Options[*fakeSnap]{Reshare: true},
			steps: []step{{do: "a", how: "restored 0"}, {do: "a", how: "restored 0"}},
			log:   []string{"capture", "restore 0", "restore 0"},
		},
		{
			name:    "reshare: a failed restore keeps the captured instance",
			opts:    Options[*fakeSnap]{Reshare: true},
			restErr: errFail,
			steps:   []step{{do: "a", how: "captured"}, {do: "a", fail: true}},
			log:     []string{"capture", "restore 0", "restore 0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &fakeEngine{next: tc.next, restErr: tc.restErr}
			o := newTable(tc.opts)
			defer o.Close()
			for k, s := range tc.steps {
				switch {
				case s.do == "close":
					o.Close()
					continue
				case strings.HasPrefix(s.do, "forget "):
					o.Forget(strings.TrimPrefix(s.do, "forget "))
					continue
				}
				inst, err := o.Instantiate(context.Background(), s.do, e, e.notice)
				if s.fail {
					if err == nil {
						t.Fatalf("step %d (%s): no error", k, s.do)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d (%s): %v", k, s.do, err)
				}
				if got := inst.(*fakeInst).how; got != s.how || inst.(*fakeInst).closed.Load() {
					t.Fatalf("step %d (%s): instance %s (closed %v), want %s", k, s.do, got, inst.(*fakeInst).closed.Load(), s.how)
				}
			}
			if got := e.logged(); !slices.Equal(got, tc.log) {
				t.Fatalf("engine asked %q, want %q", got, tc.log)
			}
			if got := e.released(); !slices.Equal(got, tc.released) {
				t.Fatalf("released %v, want %v", got, tc.released)
			}
			if len(e.notices) != tc.notices {
				t.Fatalf("notices %q, want %d", e.notices, tc.notices)
			}
			for _, n := range e.notices {
				if n != "instances start without a snapshot: refused" {
					t.Fatalf("notice %q", n)
				}
			}
		})
	}
}

// TestOwnersLookup: Lookup sees an owner's snapshot once captured, not
// while its capture is under way, not after Forget.
func TestOwnersLookup(t *testing.T) {
	e := &fakeEngine{gate: make(chan struct{}), inCap: make(chan struct{})}
	o := newTable(Options[*fakeSnap]{})
	defer o.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := o.Instantiate(context.Background(), "a", e, nil); err != nil {
			t.Error(err)
		}
	}()
	<-e.inCap
	if _, ok := o.Lookup("a"); ok {
		t.Fatal("a snapshot while the capture is under way")
	}
	close(e.gate)
	<-done
	if s, ok := o.Lookup("a"); !ok || s.id != 0 {
		t.Fatalf("Lookup %v %v", s, ok)
	}
	o.Forget("a")
	if _, ok := o.Lookup("a"); ok {
		t.Fatal("a snapshot after Forget")
	}
}

// TestOwnersConcurrentFirst: while an owner's first instance captures, its
// other instances start from scratch; once captured, they restore; one
// capture in all. Concurrent first captures refused give one notice.
func TestOwnersConcurrentFirst(t *testing.T) {
	t.Run("one owner", func(t *testing.T) {
		e := &fakeEngine{gate: make(chan struct{}), inCap: make(chan struct{}, 1)}
		o := newTable(Options[*fakeSnap]{})
		defer o.Close()
		first := make(chan runtime.Instance)
		go func() {
			inst, err := o.Instantiate(context.Background(), "a", e, nil)
			if err != nil {
				t.Error(err)
			}
			first <- inst
		}()
		<-e.inCap
		var wg sync.WaitGroup
		hows := make([]string, 8)
		for k := range hows {
			wg.Add(1)
			go func() {
				defer wg.Done()
				inst, err := o.Instantiate(context.Background(), "a", e, nil)
				if err != nil {
					t.Error(err)
					return
				}
				hows[k] = inst.(*fakeInst).how
			}()
		}
		wg.Wait()
		for _, h := range hows {
			if h != "scratch" {
				t.Fatalf("during the capture: %q", hows)
			}
		}
		close(e.gate)
		if how := (<-first).(*fakeInst).how; how != "captured" {
			t.Fatalf("first %s", how)
		}
		inst, err := o.Instantiate(context.Background(), "a", e, nil)
		if err != nil || inst.(*fakeInst).how != "restored 0" {
			t.Fatalf("after: %v %v", inst, err)
		}
		if n := strings.Count(strings.Join(e.logged(), ","), "capture"); n != 1 {
			t.Fatalf("%d captures: %q", n, e.logged())
		}
	})
	t.Run("refused, many owners", func(t *testing.T) {
		const n = 8
		e := &fakeEngine{gate: make(chan struct{}), inCap: make(chan struct{}, n)}
		for range n {
			e.next = append(e.next, errRefuse)
		}
		o := newTable(Options[*fakeSnap]{})
		defer o.Close()
		var wg sync.WaitGroup
		for k := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				inst, err := o.Instantiate(context.Background(), fmt.Sprint(k), e, e.notice)
				if err != nil || inst.(*fakeInst).how != "scratch" {
					t.Errorf("%v %v", inst, err)
				}
			}()
		}
		for range n {
			<-e.inCap
		}
		close(e.gate)
		wg.Wait()
		if len(e.notices) != 1 {
			t.Fatalf("notices %q", e.notices)
		}
	})
}

// TestOwnersReleaseWaits: Forget and Close during a restore release the
// snapshot only once the restore is done; the restore succeeds; after
// Forget, the owner's next instance captures again.
func TestOwnersReleaseWaits(t *testing.T) {
	for _, what := range []string{"forget", "close"} {
		t.Run(what, func(t *testing.T) {
			e := &fakeEngine{}
			o := newTable(Options[*fakeSnap]{})
			defer o.Close()
			ctx := context.Background()
			if _, err := o.Instantiate(ctx, "a", e, nil); err != nil {
				t.Fatal(err)
			}
			e.restGate, e.inRest = make(chan struct{}), make(chan struct{})
			restored := make(chan runtime.Instance)
			go func() {
				inst, err := o.Instantiate(ctx, "a", e, nil)
				if err != nil {
					t.Error(err)
				}
				restored <- inst
			}()
			<-e.inRest
			released := make(chan struct{})
			go func() {
				defer close(released)
				if what == "forget" {
					o.Forget("a")
				} else {
					o.Close()
				}
			}()
			select {
			case <-released:
				t.Fatalf("%s returned during a restore", what)
			case <-time.After(50 * time.Millisecond):
			}
			if got := e.released(); len(got) != 0 {
				t.Fatalf("released %v during a restore", got)
			}
			close(e.restGate)
			if inst := <-restored; inst == nil || inst.(*fakeInst).how != "restored 0" {
				t.Fatalf("restore gave %v", inst)
			}
			<-released
			if got := e.released(); !slices.Equal(got, []int{0}) {
				t.Fatalf("released %v", got)
			}
			e.restGate, e.inRest = nil, nil
			inst, err := o.Instantiate(ctx, "a", e, nil)
			want := map[string]string{"forget": "captured", "close": "scratch"}[what]
			if err != nil || inst.(*fakeInst).how != want {
				t.Fatalf("next instance %v %v, want %s", inst, err, want)
			}
		})
	}
}

// TestOwnersCaptureAfter: a capture under way when its owner is forgotten
// stores its snapshot; one under way when the table closes releases it.
func TestOwnersCaptureAfter(t *testing.T) {
	for _, what := range []string{"forget", "close"} {
		t.Run(what, func(t *testing.T) {
			e := &fakeEngine{gate: make(chan struct{}), inCap: make(chan struct{})}
			o := newTable(Options[*fakeSnap]{})
			defer o.Close()
			done := make(chan runtime.Instance)
			go func() {
				inst, err := o.Instantiate(context.Background(), "a", e, nil)
				if err != nil {
					t.Error(err)
				}
				done <- inst
			}()
			<-e.inCap
			if what == "forget" {
				o.Forget("a")
			} else {
				o.Close()
			}
			close(e.gate)
			if inst := <-done; inst == nil || inst.(*fakeInst).how != "captured" {
				t.Fatalf("first instance %v", inst)
			}
			_, stored := o.Lookup("a")
			if released := e.released(); stored != (what == "forget") || stored == (len(released) == 1) {
				t.Fatalf("stored %v, released %v", stored, released)
			}
		})
	}
}

// TestOwnersSpare: with Options.Spare, a spare is captured once a second
// owner has come (a module one owner uses never pays for one); a new owner
// takes it (restored, no capture of its own) and another is captured;
// Close ends a spare's capture under way and releases the spare; with
// Options.SpareDelay the capture starts after the delay, and a Close
// during the delay ends it without a capture.
func TestOwnersSpare(t *testing.T) {
	wait := func(t *testing.T, o *Owners[*fakeSnap]) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !o.HasSpare(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no spare")
			}
		}
	}
	t.Run("taken", func(t *testing.T) {
		e := &fakeEngine{}
		o := newTable(Options[*fakeSnap]{Spare: time.Minute, Reshare: true})
		ctx := context.Background()
		if inst, err := o.Instantiate(ctx, "a", e, nil); err != nil || inst.(*fakeInst).how != "restored 0" {
			t.Fatal(inst, err)
		}
		time.Sleep(20 * time.Millisecond)
		if o.HasSpare() {
			t.Fatal("a spare while one owner has come")
		}
		if inst, err := o.Instantiate(ctx, "b", e, nil); err != nil || inst.(*fakeInst).how != "restored 1" {
			t.Fatal(inst, err)
		}
		wait(t, o)
		if inst, err := o.Instantiate(ctx, "c", e, nil); err != nil || inst.(*fakeInst).how != "restored 2" {
			t.Fatal(inst, err)
		}
		if s, ok := o.Lookup("c"); !ok || s.id != 2 {
			t.Fatalf("c's snapshot %v", s)
		}
		wait(t, o)
		if inst, err := o.Instantiate(ctx, "c", e, nil); err != nil || inst.(*fakeInst).how != "restored 2" {
			t.Fatal(inst, err)
		}
		o.Close()
		if got := e.released(); !slices.Equal(got, []int{0, 1, 2, 3}) {
			t.Fatalf("released %v after Close", got)
		}
		// The spare's capture and the restore from the spare taken run
		// at once: their order is either.
		got := e.logged()
		slices.Sort(got)
		if want := []string{"capture", "capture", "capture", "capture", "restore 0", "restore 1", "restore 2", "restore 2"}; !slices.Equal(got, want) {
			t.Fatalf("engine asked %q, want %q", got, want)
		}
	})
	t.Run("none before a capture", func(t *testing.T) {
		e := &fakeEngine{next: []error{errFail}}
		o := newTable(Options[*fakeSnap]{Spare: time.Minute})
		defer o.Close()
		if _, err := o.Instantiate(context.Background(), "a", e, nil); err == nil {
			t.Fatal("no error")
		}
		time.Sleep(20 * time.Millisecond)
		if o.HasSpare() || !slices.Equal(e.logged(), []string{"capture"}) {
			t.Fatalf("spare %v, engine asked %q", o.HasSpare(), e.logged())
		}
	})
	t.Run("delayed", func(t *testing.T) {
		e := &fakeEngine{}
		const delay = 300 * time.Millisecond
		o := newTable(Options[*fakeSnap]{Spare: time.Minute, SpareDelay: delay})
		defer o.Close()
		start := time.Now()
		for _, owner := range []string{"a", "b"} {
			if _, err := o.Instantiate(context.Background(), owner, e, nil); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(delay / 3)
		e.mu.Lock()
		n := e.captures
		e.mu.Unlock()
		if n != 2 && time.Since(start) < delay {
			t.Fatalf("%d captures before the delay was over", n)
		}
		wait(t, o)
		if d := time.Since(start); d < delay {
			t.Fatalf("a spare after %v, before the %v delay", d, delay)
		}
	})
	t.Run("close during the delay", func(t *testing.T) {
		e := &fakeEngine{}
		o := newTable(Options[*fakeSnap]{Spare: time.Minute, SpareDelay: time.Hour})
		for _, owner := range []string{"a", "b"} {
			if _, err := o.Instantiate(context.Background(), owner, e, nil); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan struct{})
		go func() { o.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Close waited for the delay")
		}
		if got := e.logged(); !slices.Equal(got, []string{"capture", "capture"}) {
			t.Fatalf("engine asked %q", got)
		}
		if o.HasSpare() {
			t.Fatal("a spare after Close")
		}
	})
	t.Run("close ends its capture", func(t *testing.T) {
		e := &fakeEngine{gate: make(chan struct{}), gateFrom: 2, inCap: make(chan struct{}, 3)}
		o := newTable(Options[*fakeSnap]{Spare: time.Minute})
		for _, owner := range []string{"a", "b"} {
			if _, err := o.Instantiate(context.Background(), owner, e, nil); err != nil {
				t.Fatal(err)
			}
		}
		// The spare's capture (the third) waits on the gate until Close
		// cancels it.
		o.Close()
		if !slices.Contains(e.logged(), "capture stopped") {
			t.Fatalf("engine asked %q", e.logged())
		}
		if o.HasSpare() {
			t.Fatal("a spare after Close")
		}
		if got := e.released(); !slices.Equal(got, []int{0, 1}) {
			t.Fatalf("released %v", got)
		}
	})
}

// TestOwnersSparePool: with Options.Spares the pool fills to that many
// spares and no more; each new owner takes one of its own (no two owners
// ever share a snapshot, spare or not, however many come at once); the
// pool is refilled once no new owner has come for SpareDelay; Close
// releases every spare exactly once, and a second Close does nothing.
func TestOwnersSparePool(t *testing.T) {
	const spares = 3
	e := &fakeEngine{}
	o := newTable(Options[*fakeSnap]{Spare: time.Minute, Spares: spares, SpareDelay: 10 * time.Millisecond, Reshare: true})
	ctx := context.Background()
	full := func(t *testing.T) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); o.Spares() < spares; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d spares, want %d", o.Spares(), spares)
			}
		}
		time.Sleep(50 * time.Millisecond) // the refill ends when full
		if n := o.Spares(); n != spares {
			t.Fatalf("%d spares, want %d", n, spares)
		}
	}
	snapOf := map[string]int{}
	instantiate := func(owner string) string {
		inst, err := o.Instantiate(ctx, owner, e, nil)
		if err != nil {
			t.Fatal(err)
		}
		return inst.(*fakeInst).how
	}
	for _, owner := range []string{"a", "b"} {
		instantiate(owner)
	}
	full(t)
	e.mu.Lock()
	captured := e.captures
	e.mu.Unlock()
	if captured != 2+spares {
		t.Fatalf("%d captures for 2 owners and %d spares", captured, spares)
	}
	// A burst of new owners, at once: the spares go one to an owner, the
	// rest capture their own.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("burst%d", i)
			how := instantiate(owner)
			mu.Lock()
			snapOf[owner] = -1
			if s, ok := o.Lookup(owner); ok {
				snapOf[owner] = s.id
			}
			mu.Unlock()
			if !strings.HasPrefix(how, "restored ") {
				t.Errorf("%s: %s", owner, how)
			}
		}()
	}
	wg.Wait()
	seen := map[int]string{}
	for owner, id := range snapOf {
		if id < 0 {
			t.Fatalf("%s has no snapshot", owner)
		}
		if other, dup := seen[id]; dup {
			t.Fatalf("%s and %s share snapshot %d", owner, other, id)
		}
		seen[id] = owner
	}
	// refilled, and again bounded
	full(t)
	// A later owner takes a spare: restored at once, no capture of its own.
	e.mu.Lock()
	before := e.captures
	e.mu.Unlock()
	if how := instantiate("late"); !strings.HasPrefix(how, "restored ") {
		t.Fatalf("late: %s", how)
	}
	s, _ := o.Lookup("late")
	if s.id >= before {
		t.Fatalf("late's snapshot %d was captured for it, not a spare (%d before)", s.id, before)
	}
	if slices.Contains(slices.Collect(maps.Values(snapOf)), s.id) {
		t.Fatalf("late got snapshot %d, another owner's", s.id)
	}
	o.Close()
	o.Close()
	e.mu.Lock()
	n := len(e.snaps)
	e.mu.Unlock()
	if got := e.released(); len(got) != n {
		t.Fatalf("released %v of %d snapshots after Close", got, n)
	}
	if o.Spares() != 0 {
		t.Fatal("spares after Close")
	}
	if how := instantiate("after close"); how != "scratch" {
		t.Fatalf("after Close: %s", how)
	}
}
