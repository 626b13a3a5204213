package host_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/oci"
	"github.com/aiodhq/aiod/host/oci/ocireg"
	"github.com/aiodhq/aiod/host/plugin"
)

// syncBuffer is a log sink safe for the host's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func pushPackage(t *testing.T, dir, ref string) string {
	t.Helper()
	mj, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(filepath.Join(dir, "plugin.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := ocireg.Push(context.Background(), ref, mj, wasm)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newKey(t *testing.T) (*ecdsa.PrivateKey, string) {
	t.Helper()
	priv, pub, err := oci.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := oci.ParsePrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return k, string(pub)
}

// TestOCIPlugins: a plugin the policy names by OCI reference is fetched
// from a real registry (go-containerregistry's, on loopback) and served;
// with require_signatures a new version that is unsigned, signed by an
// untrusted key, or not fetchable (the registry gone) is refused at
// reload with its reason while the signed one keeps serving; a cached
// version serves without the registry; and when the policy stops
// trusting the key that signed the serving version, it is unloaded.
func TestOCIPlugins(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://")
	work := t.TempDir()
	v1dir, v2dir := swapPackages(t, work)
	ref1 := pushPackage(t, v1dir, reg+"/aiod/swap:1")
	ref2 := pushPackage(t, v2dir, reg+"/aiod/swap:2")
	// a third version, pushed nowhere
	ref3 := reg + "/aiod/swap@sha256:" + strings.Repeat("3", 64)
	ops, opsPub := newKey(t)
	other, otherPub := newKey(t)
	if _, _, err := ocireg.Sign(context.Background(), ref1, ops); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(work, "policy.json")
	writePolicy := func(ref string, keys map[string]string) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"plugins": map[string]any{"swap": map[string]any{"oci": ref}},
			"trusted_keys": keys, "require_signatures": true})
		if err := os.WriteFile(policy, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	trusted := map[string]string{"ops": opsPub}
	writePolicy(ref1, trusted)
	var logs syncBuffer
	cache := filepath.Join(work, "cache")
	_, url := serveHost(t, host.Config{PolicyFile: policy, PluginCache: cache, AdminKey: "adm",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	which := func() string {
		t.Helper()
		s, err := callWhich(url, "x")
		if err != nil {
			return "error: " + err.Error()
		}
		return s
	}
	if got := which(); got != "v1:x" {
		t.Fatalf("v1 from the registry answers %q", got)
	}
	_, body := adminDo(t, "GET", url+"/admin/plugins", "adm")
	var swap map[string]any
	for _, p := range body["data"].(map[string]any)["plugins"].([]any) {
		if p.(map[string]any)["name"] == "swap" {
			swap = p.(map[string]any)
		}
	}
	if swap["signed_by"] != "ops" || swap["source"] != "oci://"+reg+"/aiod/swap" {
		t.Fatalf("admin plugins: %v", swap)
	}
	if _, body := adminDo(t, "GET", url+"/admin/state", "adm"); !strings.Contains(fmt.Sprint(body), "signature:signed by ops") {
		t.Fatalf("admin state: %v", body)
	}
	reload := func(want string) {
		t.Helper()
		_, body := adminDo(t, "POST", url+"/admin/reload", "adm")
		errs := fmt.Sprint(body["data"].(map[string]any)["errors"])
		if want == "" && errs != "[]" && errs != "<nil>" || want != "" && !strings.Contains(errs, want) {
			t.Fatalf("reload errors %s, want %q", errs, want)
		}
	}
	// v2 unsigned: refused, v1 keeps serving
	writePolicy(ref2, trusted)
	reload("signature required: artifact " + strings.SplitN(ref2, "@", 2)[1] + ": unsigned")
	if got := which(); got != "v1:x" {
		t.Fatalf("after an unsigned v2: %q", got)
	}
	// v2 signed by a key the policy does not trust: refused
	if _, _, err := ocireg.Sign(context.Background(), ref2, other); err != nil {
		t.Fatal(err)
	}
	reload("made by no trusted key")
	if got := which(); got != "v1:x" {
		t.Fatalf("after a v2 signed by another key: %q", got)
	}
	// signed by ops too: v2 serves
	if _, _, err := ocireg.Sign(context.Background(), ref2, ops); err != nil {
		t.Fatal(err)
	}
	reload("")
	if got := which(); got != "v2:x" {
		t.Fatalf("after a v2 signed by ops: %q", got)
	}
	// the registry gone: v1, cached, serves again; v3 cannot be fetched
	srv.Close()
	writePolicy(ref1, trusted)
	reload("")
	if got := which(); got != "v1:x" {
		t.Fatalf("v1 from the cache: %q", got)
	}
	writePolicy(ref3, trusted)
	reload("plugin swap: fetch " + ref3)
	if got := which(); got != "v1:x" {
		t.Fatalf("after a fetch failure: %q", got)
	}
	if !strings.Contains(logs.String(), `msg="plugin fetch failed; a version of it already serving keeps serving" plugin=swap ref=`+ref3) {
		t.Fatalf("no log line of the failed fetch:\n%s", logs.String())
	}
	// the key that signed v1 no longer trusted: v1 is refused and unloaded
	writePolicy(ref1, map[string]string{"other": otherPub})
	reload("made by no trusted key")
	if got := which(); !strings.Contains(got, "error") {
		t.Fatalf("v1 signed by a key no longer trusted still answers %q", got)
	}
}

// TestLockdownOCISigned: in lockdown, once the policy has trusted keys, a
// plugin named by OCI reference (and pinned) must be signed though the
// policy does not say require_signatures: unsigned it is refused at start
// with the reason, signed it is served after the reload.
func TestLockdownOCISigned(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the plugin under bubblewrap: make test runs it, make test-short does not")
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://")
	plugins, digest := echoPackage(t)
	ref := pushPackage(t, filepath.Join(plugins, "echo"), reg+"/aiod/echo:1")
	key, pub := newKey(t)
	doc, _ := json.Marshal(map[string]any{"plugins": map[string]any{"echo": map[string]any{"oci": ref, "sha256": digest}},
		"trusted_keys": map[string]string{"ops": pub}})
	policy := writePolicy(t, string(doc))
	h, _, _ := runHost(t, host.Config{APIKey: "k", PolicyFile: policy, PluginCache: filepath.Join(t.TempDir(), "cache"),
		LockdownConfig: host.LockdownConfig{Lockdown: true, DataDir: t.TempDir()},
		TenancyConfig:  host.TenancyConfig{AuditLog: filepath.Join(t.TempDir(), "audit.log")}})
	if e := h.Registry().Catalog().LoadError("echo"); !strings.Contains(e, "signature required: artifact "+strings.SplitN(ref, "@", 2)[1]+": unsigned") {
		t.Fatalf("unsigned in lockdown: load error %q", e)
	}
	if h.Registry().Catalog().Lookup("echo") != nil {
		t.Fatal("the unsigned plugin is served")
	}
	if _, _, err := ocireg.Sign(context.Background(), ref, key); err != nil {
		t.Fatal(err)
	}
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, err := h.Registry().CallTool(context.Background(), plugin.CallRequest{Owner: "alice", Name: "echo", Args: []byte(`{"text":"hi"}`)})
	if err != nil || !strings.Contains(string(out), "hi") {
		t.Fatalf("echo, signed: %s %v", out, err)
	}
}
