//go:build !wasip1

package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/sdk/sdktest"
	"github.com/aiodhq/aiod/sdk/state"
)

// TestCursorLifetime: a cursor answers its pages until cursorLifetime
// has passed, and not after; the next cut drops expired cursors.
func TestCursorLifetime(t *testing.T) {
	sdktest.New(t, sdktest.WithState(1<<20))
	now := time.Unix(1_800_000_000, 0)
	rest := strings.Repeat("a", truncateChars+10)
	c := keep(kept{Status: "completed", Cwd: "/tmp", Rest: rest}, now)
	if c == "" {
		t.Fatal("not kept")
	}
	_, part, next, err := page(c, now.Add(cursorLifetime-time.Second))
	if err != nil || len(part) != truncateChars || next == "" {
		t.Fatalf("first page: %d chars, next %q, %v", len(part), next, err)
	}
	if _, _, _, err := page(next, now.Add(cursorLifetime+time.Second)); !errors.Is(err, errCursor) {
		t.Fatalf("after the lifetime: %v", err)
	}
	keep(kept{Rest: "x"}, now.Add(cursorLifetime+time.Second))
	if keys, _ := state.List(cursorPrefix); len(keys) != 1 {
		t.Errorf("expired cursor not dropped: %v", keys)
	}
}

// TestCursorBound: when the space is full the newest output evicts the
// older cursors; an output larger than the whole space gets no cursor.
func TestCursorBound(t *testing.T) {
	sdktest.New(t, sdktest.WithState(100_000))
	now := time.Unix(1_800_000_000, 0)
	big := strings.Repeat("b", 60_000)
	first := keep(kept{Rest: big}, now)
	second := keep(kept{Rest: big}, now)
	if first == "" || second == "" {
		t.Fatalf("cursors %q %q", first, second)
	}
	if _, _, _, err := page(first, now); !errors.Is(err, errCursor) {
		t.Errorf("older cursor still served when evicted: %v", err)
	}
	if _, part, _, err := page(second, now); err != nil || part == "" {
		t.Errorf("newest cursor: %v", err)
	}
	if c := keep(kept{Rest: strings.Repeat("c", 200_000)}, now); c != "" {
		t.Errorf("an output over the space got cursor %q", c)
	}
	for _, bad := range []string{"", "x", "1.2", "abc.def.1", "1800000600.00.-1"} {
		if _, _, _, err := page(bad, now); !errors.Is(err, errCursor) {
			t.Errorf("cursor %q: %v", bad, err)
		}
	}
}
