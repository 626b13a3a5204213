package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// TestPluginOCICommands runs keygen, push, pull, sign and add oci://
// against a real registry (go-containerregistry's) on loopback.
func TestPluginOCICommands(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://")
	work := t.TempDir()
	aiod := func(want int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != want {
			t.Fatalf("aiod %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}
	pkg := filepath.Join(work, "src", "echo")
	os.MkdirAll(pkg, 0o755)
	os.WriteFile(filepath.Join(pkg, "plugin.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	modSum := sha256.Sum256([]byte("\x00asm\x01\x00\x00\x00"))
	os.WriteFile(filepath.Join(pkg, "manifest.json"), []byte(`{"abi":1,"name":"echo","version":"1.2.3","sha256":"`+hex.EncodeToString(modSum[:])+`","tools":[{"name":"echo","description":"e","inputSchema":{"type":"object"}}]}`), 0o644)

	out := aiod(0, "plugin", "keygen", "--out", filepath.Join(work, "ops"))
	if !strings.Contains(out, `"trusted_keys": {"ops": "`) {
		t.Fatalf("keygen: %s", out)
	}
	if st, err := os.Stat(filepath.Join(work, "ops.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("private key file: %v %v", st, err)
	}
	aiod(1, "plugin", "keygen", "--out", filepath.Join(work, "ops")) // never overwrites a key
	aiod(0, "plugin", "keygen", "--out", filepath.Join(work, "other"))

	out = aiod(0, "plugin", "push", pkg, reg+"/aiod/echo:1")
	ref := regexp.MustCompile(`as (\S+@sha256:[0-9a-f]{64})`).FindStringSubmatch(out)
	if ref == nil || !strings.Contains(out, `"echo": {"oci": "`+ref[1]+`", "sha256": "`) {
		t.Fatalf("push: %s", out)
	}
	out = aiod(0, "plugin", "pull", reg+"/aiod/echo:1", "--into", filepath.Join(work, "pulled"))
	if !strings.Contains(out, "pulled echo 1.2.3 from "+ref[1]) {
		t.Fatalf("pull: %s", out)
	}
	for _, f := range []string{"manifest.json", "plugin.wasm", "artifact.json", "signatures.json"} {
		if _, err := os.Stat(filepath.Join(work, "pulled", "echo", f)); err != nil {
			t.Fatal(err)
		}
	}
	out = aiod(1, "plugin", "pull", ref[1], "--into", filepath.Join(work, "p2"), "--key", filepath.Join(work, "ops.pub"))
	if !strings.Contains(out, "unsigned") {
		t.Fatalf("pull --key of an unsigned package: %s", out)
	}
	aiod(0, "plugin", "sign", reg+"/aiod/echo:1", "--key", filepath.Join(work, "ops.key"))
	out = aiod(1, "plugin", "pull", ref[1], "--into", filepath.Join(work, "p2"), "--key", filepath.Join(work, "other.pub"))
	if !strings.Contains(out, "made by no trusted key") {
		t.Fatalf("pull --key of another key: %s", out)
	}
	out = aiod(0, "plugin", "pull", ref[1], "--into", filepath.Join(work, "p2"), "--key", filepath.Join(work, "ops.pub"))
	if !strings.Contains(out, "1 signatures, signed by "+filepath.Join(work, "ops.pub")) {
		t.Fatalf("pull --key of a signed package: %s", out)
	}
	// verify checks the signatures against the policy's keys
	pubPEM, _ := os.ReadFile(filepath.Join(work, "ops.pub"))
	pol, _ := json.Marshal(map[string]any{"trusted_keys": map[string]string{"ops": string(pubPEM)}, "require_signatures": true})
	os.WriteFile(filepath.Join(work, "policy.json"), pol, 0o644)
	out = aiod(0, "plugin", "verify", filepath.Join(work, "p2", "echo"), "--policy", filepath.Join(work, "policy.json"))
	if !strings.Contains(out, "signed  by ops") || strings.Contains(out, "signature required") {
		t.Fatalf("verify of a signed package: %s", out)
	}
	out = aiod(1, "plugin", "verify", pkg, "--policy", filepath.Join(work, "policy.json"))
	if !strings.Contains(out, "refused: plugin echo: signature required: unsigned") {
		t.Fatalf("verify of an unsigned package: %s", out)
	}
	// add wants a digest and a plugins directory
	aiod(2, "plugin", "add", "oci://"+reg+"/aiod/echo:1", "--into", filepath.Join(work, "plugins"))
	aiod(2, "plugin", "add", "oci://"+ref[1])
	out = aiod(0, "plugin", "add", "oci://"+ref[1], "--into", filepath.Join(work, "plugins"))
	if _, err := os.Stat(filepath.Join(work, "plugins", "echo", "artifact.json")); err != nil || !strings.Contains(out, `"echo": {"sha256": "`) {
		t.Fatalf("add: %s %v", out, err)
	}
	aiod(1, "plugin", "add", "oci://"+ref[1], "--into", filepath.Join(work, "plugins")) // exists
	// a package whose manifest pins another module is not pushed
	os.WriteFile(filepath.Join(pkg, "manifest.json"), []byte(`{"abi":1,"name":"echo","version":"1","sha256":"`+strings.Repeat("0", 64)+`","tools":[{"name":"echo","description":"e","inputSchema":{"type":"object"}}]}`), 0o644)
	if out := aiod(1, "plugin", "push", pkg, reg+"/aiod/echo:2"); !strings.Contains(out, "does not match the manifest's sha256") {
		t.Fatalf("push of a mismatched package: %s", out)
	}
	// signing something that is not an aiod plugin
	if out := aiod(1, "plugin", "sign", reg+"/aiod/none:1", "--key", filepath.Join(work, "ops.key")); !strings.Contains(out, "not found") {
		t.Fatalf("sign of nothing: %s", out)
	}
}
