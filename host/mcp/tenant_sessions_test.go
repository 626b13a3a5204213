package mcp

import (
	"testing"
	"time"
)

// TestSessionsPerOwner: at an owner's limit its own least recently used
// idle session makes room, a busy one never does, and another owner's
// sessions are untouched.
func TestSessionsPerOwner(t *testing.T) {
	tb := newSessions(100, time.Hour)
	defer tb.close()
	tb.perOwner = func(owner string) int { return map[string]int{"a": 2}[owner] }
	b1, _ := tb.create("b", "2025-06-18", clientCaps{}, nil)
	a1, _ := tb.create("a", "2025-06-18", clientCaps{}, nil)
	time.Sleep(time.Millisecond)
	a2, _ := tb.create("a", "2025-06-18", clientCaps{}, nil)
	a3, err := tb.create("a", "2025-06-18", clientCaps{}, nil)
	if err != nil || a3 == nil {
		t.Fatalf("third session of a: %v", err)
	}
	if tb.get(a1.id, "a") != nil || tb.get(a2.id, "a") == nil || tb.get(b1.id, "b") == nil {
		t.Fatal("want a's oldest idle session ended, its newer one and b's kept")
	}
	a2.busy.Add(1)
	a3.busy.Add(1)
	if _, err := tb.create("a", "2025-06-18", clientCaps{}, nil); err != errTooManySessions {
		t.Fatalf("a at its limit with both sessions busy: %v, want errTooManySessions", err)
	}
	for range 5 {
		if _, err := tb.create("b", "2025-06-18", clientCaps{}, nil); err != nil {
			t.Fatalf("b, which has no limit: %v", err)
		}
	}
}

// TestRequestStateBoundToOwner: an MRTR requestState sealed for one
// tenant does not open for another, even for the same method and params.
func TestRequestStateBoundToOwner(t *testing.T) {
	s := newStateSealer(time.Minute)
	digest := paramsDigest("echo", []byte(`{"text":"x"}`))
	tok, err := s.seal(&requestState{Round: 1}, stateBinding("alice", "tools/call", digest))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.open(tok, stateBinding("bob", "tools/call", digest)); err == nil {
		t.Fatal("bob opened alice's requestState")
	}
	if st, err := s.open(tok, stateBinding("alice", "tools/call", digest)); err != nil || st.Round != 1 {
		t.Fatalf("alice's own state: %v %v", st, err)
	}
}
