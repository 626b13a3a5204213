package plugin_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/oci"
	"github.com/aiodhq/aiod/host/plugin"
)

// TestSignaturesInLockdown: in lockdown (pins required) a policy with
// trusted keys requires a signature of every plugin from the plugins
// directory, though it does not say require_signatures: a package without
// its artifact record is refused with the reason, a signed one loads and
// names its signer, and a new signature of another artifact is refused
// while the signed version keeps serving. Outside lockdown the same
// policy loads the unsigned package.
func TestSignaturesInLockdown(t *testing.T) {
	dir := t.TempDir()
	pkg := testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	wasm, _ := os.ReadFile(filepath.Join(pkg, "plugin.wasm"))
	mj, _ := os.ReadFile(filepath.Join(pkg, "manifest.json"))
	sum := sha256.Sum256(wasm)
	priv, pub, _ := oci.GenerateKey(rand.Reader)
	key, _ := oci.ParsePrivateKey(priv)
	doc, _ := json.Marshal(map[string]any{"plugins": map[string]any{"echo": map[string]any{"sha256": hex.EncodeToString(sum[:])}},
		"trusted_keys": map[string]string{"ops": string(pub)}})
	policy, err := caps.ParsePolicy(doc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	open := func(lockdown bool) (*plugin.Registry, error) {
		reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Policy: policy, Dir: dir, Logger: quiet(), RequirePins: lockdown})
		t.Cleanup(func() { reg.Close(ctx) })
		return reg, err
	}
	if _, err := open(true); err == nil || !strings.Contains(err.Error(), "signature required: unsigned") || !strings.Contains(err.Error(), oci.ArtifactFile) {
		t.Fatalf("unsigned in lockdown: %v", err)
	}
	if reg, err := open(false); err != nil || reg.Catalog().Lookup("echo") == nil || reg.Catalog().Plugins[0].Signer != "" {
		t.Fatalf("unsigned outside lockdown: %v", err)
	}
	art, _ := oci.Build(mj, wasm)
	sig, _ := oci.Sign(key, oci.Payload("127.0.0.1:5000/aiod/echo", oci.Digest(art)))
	sigs, _ := json.Marshal([]oci.Signature{sig})
	os.WriteFile(filepath.Join(pkg, oci.ArtifactFile), art, 0o644)
	os.WriteFile(filepath.Join(pkg, oci.SignaturesFile), sigs, 0o644)
	reg, err := open(true)
	if err != nil || reg.Catalog().Lookup("echo") == nil {
		t.Fatalf("signed in lockdown: %v", err)
	}
	if s := reg.Catalog().Plugins[0].Signer; s != "ops" {
		t.Fatalf("signer %q", s)
	}
	// a signature of another artifact: refused, the signed version kept
	other, _ := oci.Sign(key, oci.Payload("127.0.0.1:5000/aiod/echo", oci.Digest([]byte("another"))))
	sigs, _ = json.Marshal([]oci.Signature{other})
	os.WriteFile(filepath.Join(pkg, oci.SignaturesFile), sigs, 0o644)
	rep, err := reg.ReloadReport(ctx)
	if err == nil || !strings.Contains(err.Error(), "not this artifact") || len(rep.Kept) != 1 || reg.Catalog().Lookup("echo") == nil {
		t.Fatalf("reload with a wrong signature: %v %+v", err, rep)
	}
}

// TestRemotes: a package fetched from a registry loads from its cache
// directory with the stable source it was given; one whose plugin is not
// the one its policy entry names, or whose fetch failed, is refused with
// the reason.
func TestRemotes(t *testing.T) {
	cache := t.TempDir()
	pkg := testplugins.Package(t, filepath.Join(cache, "sha256-x"), "plugins/examples/echo", nil, nil)
	ctx := context.Background()
	reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Logger: quiet(), Remotes: []plugin.Remote{
		{Name: "echo", Where: "oci://127.0.0.1:5000/aiod/echo", Dir: pkg},
		{Name: "other", Where: "oci://127.0.0.1:5000/aiod/other", Dir: pkg},
		{Name: "gone", Where: "oci://127.0.0.1:5000/aiod/gone", Err: os.ErrNotExist},
	}})
	t.Cleanup(func() { reg.Close(ctx) })
	if err == nil || !strings.Contains(err.Error(), "plugin other: the artifact oci://127.0.0.1:5000/aiod/other holds plugin echo") ||
		!strings.Contains(err.Error(), "plugin gone: file does not exist") {
		t.Fatalf("load errors: %v", err)
	}
	ps := reg.Catalog().Plugins
	if len(ps) != 1 || ps[0].Manifest.Name != "echo" || ps[0].Source != "oci://127.0.0.1:5000/aiod/echo" {
		t.Fatalf("plugins: %+v", ps)
	}
}
