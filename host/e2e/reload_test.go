package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestReloadTellsClients: bin/aiod watching its plugins directory; the
// TypeScript v2 client, in each era, lists the tools, a plugin package is
// renamed into the directory, and the client is told once (2026-07-28:
// on its subscriptions/listen stream; legacy: on its GET stream) and sees
// the new tool without reconnecting.
func TestReloadTellsClients(t *testing.T) {
	t.Parallel()
	onEngines(t, testReloadTellsClients)
}

func testReloadTellsClients(t *testing.T, engine string) {
	_, built := binaries(t)
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			work := t.TempDir()
			dir := filepath.Join(work, "plugins")
			os.MkdirAll(dir, 0o755)
			copyTree(t, filepath.Join(built, "hash"), filepath.Join(dir, "hash"))
			staging := filepath.Join(work, "echo")
			copyTree(t, filepath.Join(built, "echo"), staging)
			a := start(t, nil, "--plugins-dir", dir, "--watch", "--watch-debounce", "50ms", "--engine", engine)
			r := runNode(t, nil, clientScript("ts-v2-listchanged.mjs"), a.URL, staging, filepath.Join(dir, "echo"), era)
			before, after := names(r["before"]), names(r["after"])
			if slices.Contains(before, "echo") || !slices.Contains(after, "echo") || len(after) != len(before)+1 {
				t.Errorf("tools before %v, after %v: want echo added", before, after)
			}
			if r["changes"] != float64(1) {
				t.Errorf("%v list changes for one swap, want 1", r["changes"])
			}
			if r["era"] != era {
				t.Errorf("era %v, want %s", r["era"], era)
			}
		})
	}
}

func names(v any) []string {
	var out []string
	for _, n := range v.([]any) {
		out = append(out, fmt.Sprint(n))
	}
	return out
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}
