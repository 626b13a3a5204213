package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestWatcherComplete: the watcher skips the debounce only for changes it
// can prove complete: a package gone, or whose module matches the sha256
// its manifest pins, and a policy file that parses.
func TestWatcherComplete(t *testing.T) {
	wasm := []byte("\x00asm\x01\x00\x00\x00 a module")
	sum := sha256.Sum256(wasm)
	pin := hex.EncodeToString(sum[:])
	manifest := func(sha string) string {
		return fmt.Sprintf(`{"name":"p","version":"1.0.0","abi":1,"sha256":%q,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"}}]}`, sha)
	}
	for _, tc := range []struct {
		name     string
		manifest string // "" writes none
		module   []byte // nil writes none
		policy   string // "" touches no policy file
		want     bool
	}{
		{"pinned and matching", manifest(pin), wasm, "", true},
		{"module half written", manifest(pin), wasm[:6], "", false},
		{"module not yet written", manifest(pin), nil, "", false},
		{"manifest not yet written", "", wasm, "", false},
		{"manifest half written", manifest(pin)[:30], wasm, "", false},
		{"no pinned digest", `{"name":"p","version":"1.0.0","abi":1,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"}}]}`, wasm, "", false},
		{"policy parses", manifest(pin), wasm, `{}`, true},
		{"policy half written", manifest(pin), wasm, `{"plugins":`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pkg := filepath.Join(dir, "p")
			os.MkdirAll(pkg, 0o755)
			if tc.manifest != "" {
				os.WriteFile(filepath.Join(pkg, "manifest.json"), []byte(tc.manifest), 0o644)
			}
			if tc.module != nil {
				os.WriteFile(filepath.Join(pkg, "plugin.wasm"), tc.module, 0o644)
			}
			w := &Watcher{dir: dir}
			w.touch(filepath.Join(pkg, "plugin.wasm"))
			w.touch(filepath.Join(dir, "gone.next")) // a temporary name renamed away
			if tc.policy != "" {
				w.policy = filepath.Join(t.TempDir(), "policy.json")
				os.WriteFile(w.policy, []byte(tc.policy), 0o644)
				w.touch(w.policy)
			}
			if got := w.complete(); got != tc.want {
				t.Errorf("complete() = %v, want %v (touched %v)", got, tc.want, w.touched)
			}
		})
	}
}
