package ocireg_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/oci"
	"github.com/aiodhq/aiod/host/oci/ocireg"
)

// serve starts go-containerregistry's registry on loopback, with or
// without the referrers API (without it, referrers are found through the
// tag schema), and returns its host:port.
func serve(t *testing.T, referrers bool) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(referrers), registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func pkg(version string) (manifest, module []byte) {
	module = append([]byte("\x00asm\x01\x00\x00\x00"), []byte("module "+version)...)
	manifest = []byte(`{"abi":1,"name":"echo","version":"` + version + `","tools":[{"name":"echo","description":"echo","inputSchema":{"type":"object"}}]}`)
	return manifest, module
}

func TestPushPullRoundTrip(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		reg := serve(t, referrers)
		ctx := context.Background()
		mj, mod := pkg("1.0.0")
		ref, err := ocireg.Push(ctx, reg+"/aiod/echo:1.0.0", mj, mod)
		if err != nil {
			t.Fatal(err)
		}
		art, _ := oci.Build(mj, mod)
		if want := reg + "/aiod/echo@" + oci.Digest(art); ref != want {
			t.Fatalf("pushed %s, want %s (the same package makes the same digest)", ref, want)
		}
		for _, r := range []string{reg + "/aiod/echo:1.0.0", ref, "oci://" + ref} {
			p, err := ocireg.Pull(ctx, r)
			if err != nil {
				t.Fatalf("pull %s: %v", r, err)
			}
			if !bytes.Equal(p.ManifestJSON, mj) || !bytes.Equal(p.Module, mod) || p.Ref != ref || p.Manifest.Name != "echo" || len(p.Signatures) != 0 {
				t.Fatalf("pull %s: %+v", r, p)
			}
		}
		// written as a package, its files are what the artifact names
		dir := filepath.Join(t.TempDir(), "echo")
		p, _ := ocireg.Pull(ctx, ref)
		if err := ocireg.WritePackage(dir, p, false); err != nil {
			t.Fatal(err)
		}
		if err := ocireg.WritePackage(dir, p, false); err == nil || !strings.Contains(err.Error(), "exists") {
			t.Fatalf("second write without force: %v", err)
		}
		got, _ := os.ReadFile(filepath.Join(dir, "plugin.wasm"))
		a, _ := os.ReadFile(filepath.Join(dir, oci.ArtifactFile))
		if !bytes.Equal(got, mod) || oci.Digest(a) != p.Artifact.Digest {
			t.Fatal("package files differ from the artifact")
		}
	}
}

// pushRaw pushes blobs and a hand-made manifest, as a hostile publisher
// could.
func pushRaw(t *testing.T, reg, tag string, m oci.Manifest, blobs ...[]byte) string {
	t.Helper()
	ctx := context.Background()
	repo, _, err := ocireg.Open(reg + "/evil/p")
	if err != nil {
		t.Fatal(err)
	}
	repo.MaxMetadataBytes = 1 << 20
	for _, b := range append(blobs, []byte("{}")) {
		d := descOf("application/octet-stream", b)
		if ok, _ := repo.Exists(ctx, d); !ok {
			if err := repo.Push(ctx, d, bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	mb, _ := json.Marshal(m)
	if err := repo.PushReference(ctx, descOf(oci.ImageManifestType, mb), bytes.NewReader(mb), tag); err != nil {
		t.Fatal(err)
	}
	return reg + "/evil/p:" + tag
}

func TestPullRefusesHostileArtifacts(t *testing.T) {
	reg := serve(t, true)
	mj, mod := pkg("1.0.0")
	cfg := oci.Descriptor{MediaType: oci.EmptyConfigType, Digest: oci.EmptyConfigDigest, Size: 2}
	ml := oci.Descriptor{MediaType: oci.ManifestLayerType, Digest: oci.Digest(mj), Size: int64(len(mj))}
	wl := oci.Descriptor{MediaType: oci.ModuleLayerType, Digest: oci.Digest(mod), Size: int64(len(mod))}
	big := bytes.Repeat([]byte(" "), oci.MaxManifestBytes+1)
	pinned := []byte(`{"abi":1,"name":"echo","version":"1","sha256":"` + strings.Repeat("0", 64) + `","tools":[{"name":"echo","description":"e","inputSchema":{"type":"object"}}]}`)
	art := func(layers ...oci.Descriptor) oci.Manifest {
		return oci.Manifest{SchemaVersion: 2, MediaType: oci.ImageManifestType, ArtifactType: oci.ArtifactType, Config: cfg, Layers: layers}
	}
	other := art(ml, wl)
	other.ArtifactType = "application/vnd.example.other"
	hugeModule := wl
	hugeModule.Size = oci.MaxModuleBytes + 1
	for _, c := range []struct {
		name string
		m    oci.Manifest
		want string
	}{
		{"one layer", art(ml), "1 layers, want exactly 2"},
		{"three layers", art(ml, wl, wl), "3 layers, want exactly 2"},
		{"layers swapped", art(wl, ml), `layer 0 has mediaType "` + oci.ModuleLayerType},
		{"another artifact", other, "not an aiod plugin"},
		{"oversized module layer", art(ml, hugeModule), "over the 268435456 byte limit"},
		{"oversized manifest layer", art(oci.Descriptor{MediaType: oci.ManifestLayerType, Digest: oci.Digest(big), Size: int64(len(big))}, wl), "over the 1048576 byte limit"},
		{"pin differs from module layer", art(oci.Descriptor{MediaType: oci.ManifestLayerType, Digest: oci.Digest(pinned), Size: int64(len(pinned))}, wl), "but the module layer is"},
		{"layer size lies", art(oci.Descriptor{MediaType: oci.ManifestLayerType, Digest: oci.Digest(mj), Size: int64(len(mj)) - 3}, wl), "manifest.json layer"},
	} {
		ref := pushRaw(t, reg, strings.ReplaceAll(c.name, " ", "-"), c.m, mj, mod, big, pinned)
		_, err := ocireg.Pull(context.Background(), ref)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want it to say %q", c.name, err, c.want)
		}
	}
	// an artifact manifest over its bound is refused before it is read
	fat := art(ml, wl)
	fat.Annotations = map[string]string{"x": strings.Repeat("x", oci.MaxArtifactBytes)}
	ref := pushRaw(t, reg, "fat", fat)
	if _, err := ocireg.Pull(context.Background(), ref); err == nil || !strings.Contains(err.Error(), "over the 65536 byte limit") {
		t.Errorf("fat manifest: %v", err)
	}
	// a digest the registry does not hold
	if _, err := ocireg.Pull(context.Background(), reg+"/evil/p@sha256:"+strings.Repeat("1", 64)); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("unknown digest: %v", err)
	}
}

func TestPlainHTTPOnlyOnLoopback(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1:5000": true, "localhost:5000": true, "[::1]:5000": true, "localhost": true,
		"registry.example.com": false, "10.0.0.1:5000": false, "127.0.0.1.example.com:5000": false, "0.0.0.0:5000": false} {
		if got := ocireg.PlainHTTP(host); got != want {
			t.Errorf("PlainHTTP(%s) = %v, want %v", host, got, want)
		}
		repo, _, err := ocireg.Open(host + "/a/b:1")
		if err != nil {
			t.Fatal(err)
		}
		if repo.PlainHTTP != want {
			t.Errorf("Open(%s).PlainHTTP = %v", host, repo.PlainHTTP)
		}
	}
}

func TestSignAndVerify(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		reg := serve(t, referrers)
		ctx := context.Background()
		priv, pub, _ := oci.GenerateKey(rand.Reader)
		_, otherPub, _ := oci.GenerateKey(rand.Reader)
		key, err := oci.ParsePrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		trusted := keys(t, map[string][]byte{"ops": pub})
		untrusted := keys(t, map[string][]byte{"else": otherPub})
		mj, mod := pkg("1.0.0")
		ref, _ := ocireg.Push(ctx, reg+"/aiod/echo:1", mj, mod)
		p, _ := ocireg.Pull(ctx, ref)
		if _, err := oci.Verify(p.Signatures, p.Artifact.Digest, trusted); !errors.Is(err, oci.ErrUnsigned) {
			t.Fatalf("unsigned: %v", err)
		}
		signed, _, err := ocireg.Sign(ctx, reg+"/aiod/echo:1", key)
		if err != nil || signed != ref {
			t.Fatalf("sign: %s %v", signed, err)
		}
		p, _ = ocireg.Pull(ctx, ref)
		if who, err := oci.Verify(p.Signatures, p.Artifact.Digest, trusted); err != nil || who != "ops" {
			t.Fatalf("signed: %q %v", who, err)
		}
		if _, err := oci.Verify(p.Signatures, p.Artifact.Digest, untrusted); !errors.Is(err, oci.ErrBadSignature) || !strings.Contains(err.Error(), "made by no trusted key") {
			t.Fatalf("other key: %v", err)
		}
		// the signature of v1 presented for v2 names v1's digest
		mj2, mod2 := pkg("2.0.0")
		ref2, _ := ocireg.Push(ctx, reg+"/aiod/echo:2", mj2, mod2)
		p2, _ := ocireg.Pull(ctx, ref2)
		if _, err := oci.Verify(p.Signatures, p2.Artifact.Digest, trusted); !errors.Is(err, oci.ErrBadSignature) || !strings.Contains(err.Error(), "not this artifact") {
			t.Fatalf("replayed signature: %v", err)
		}
		// a bundle whose signature was altered
		if len(p.Signatures) != 1 || len(p.Signatures[0].Bundle) == 0 {
			t.Fatalf("signatures pulled: %+v", p.Signatures)
		}
		bad := p.Signatures[0]
		bad.Bundle = bytes.Replace(bad.Bundle, []byte(`"signature":"ME`), []byte(`"signature":"MF`), 1)
		if _, err := oci.Verify([]oci.Signature{bad}, p.Artifact.Digest, trusted); !errors.Is(err, oci.ErrBadSignature) {
			t.Fatalf("altered bundle: %v", err)
		}
		// the bundle is attached as cosign 3 attaches one: a referrer of
		// the bundle's artifactType, its one layer the bundle, titled
		// sha256-<hex>.sigstore.json
		repo, _, _ := ocireg.Open(ref)
		desc, err := repo.Resolve(ctx, p.Artifact.Digest)
		if err != nil {
			t.Fatal(err)
		}
		var found []ocispec.Descriptor
		must(t, repo.Referrers(ctx, desc, "", func(page []ocispec.Descriptor) error { found = append(found, page...); return nil }))
		if len(found) != 1 {
			t.Fatalf("referrers: %+v", found)
		}
		found[0].MediaType = oci.ImageManifestType
		rc, err := repo.Fetch(ctx, found[0])
		must(t, err)
		var m oci.Manifest
		must(t, json.NewDecoder(rc).Decode(&m))
		rc.Close()
		if m.ArtifactType != oci.BundleMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != oci.BundleMediaType ||
			m.Layers[0].Annotations[ocispec.AnnotationTitle] != strings.Replace(m.Layers[0].Digest, ":", "-", 1)+".sigstore.json" ||
			m.Annotations[oci.BundleContentAnnotation] != "message-signature" || m.Subject == nil || m.Subject.Digest != p.Artifact.Digest {
			t.Fatalf("the bundle's manifest: %+v", m)
		}
	}
}

func keys(t *testing.T, pems map[string][]byte) map[string]*ecdsa.PublicKey {
	t.Helper()
	out := map[string]*ecdsa.PublicKey{}
	for n, p := range pems {
		k, err := caps.ParsePublicKey(string(p))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = k
	}
	return out
}

func TestFetchCache(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	reg := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	mj, mod := pkg("1.0.0")
	ref, _ := ocireg.Push(ctx, reg+"/aiod/echo:1", mj, mod)
	cache := t.TempDir()
	if _, _, err := ocireg.Fetch(ctx, reg+"/aiod/echo:1", cache, false); err == nil || !strings.Contains(err.Error(), "by digest") {
		t.Fatalf("fetch by tag: %v", err)
	}
	dir, warn, err := ocireg.Fetch(ctx, ref, cache, true)
	if err != nil || warn != nil {
		t.Fatal(err, warn)
	}
	if filepath.Base(dir) != "echo" {
		t.Fatalf("dir %s", dir)
	}
	srv.Close()
	// the registry gone: the cached package serves, its signatures as cached
	dir2, warn, err := ocireg.Fetch(ctx, ref, cache, true)
	if err != nil || dir2 != dir || warn == nil || !strings.Contains(warn.Error(), "the cached ones apply") {
		t.Fatalf("offline: %s %v %v", dir2, warn, err)
	}
	// a tampered cache entry is not used: fetched again, and without the
	// registry the fetch fails
	os.WriteFile(filepath.Join(dir, "plugin.wasm"), []byte("\x00asm\x01\x00\x00\x00evil"), 0o644)
	if _, warn, err := ocireg.Fetch(ctx, ref, cache, false); err == nil || warn == nil || !strings.Contains(warn.Error(), "is not the artifact's module layer") {
		t.Fatalf("tampered: %v %v", warn, err)
	}
}

func descOf(mediaType string, b []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
}

// TestCosignTagSignature: a signature stored as cosign stores it without
// referrers (only under the tag sha256-<hex>.sig, in a manifest with no
// subject whose layers are the signatures) is found and verified; one
// such layer signing another artifact is not taken for this one's.
func TestCosignTagSignature(t *testing.T) {
	reg := serve(t, false)
	ctx := context.Background()
	mj, mod := pkg("1.0.0")
	ref, err := ocireg.Push(ctx, reg+"/evil/p:1", mj, mod)
	if err != nil {
		t.Fatal(err)
	}
	art, _ := oci.Build(mj, mod)
	key, err := oci.ParsePrivateKey(mustKey(t))
	if err != nil {
		t.Fatal(err)
	}
	payload := oci.Payload(reg+"/evil/p", oci.Digest(art))
	sig, _ := oci.Sign(key, payload)
	elsewhere := oci.Payload(reg+"/evil/p", oci.Digest([]byte("x")))
	sig2, _ := oci.Sign(key, elsewhere)
	m := oci.Manifest{SchemaVersion: 2, MediaType: oci.ImageManifestType,
		Config: oci.Descriptor{MediaType: oci.EmptyConfigType, Digest: oci.EmptyConfigDigest, Size: 2},
		Layers: []oci.Descriptor{
			{MediaType: oci.SimpleSigningType, Digest: oci.Digest(elsewhere), Size: int64(len(elsewhere)), Annotations: map[string]string{oci.SignatureAnnotation: sig2.Signature}},
			{MediaType: oci.SimpleSigningType, Digest: oci.Digest(payload), Size: int64(len(payload)), Annotations: map[string]string{oci.SignatureAnnotation: sig.Signature}},
		}}
	pushRaw(t, reg, strings.Replace(oci.Digest(art), ":", "-", 1)+".sig", m, payload, elsewhere)
	p, err := ocireg.Pull(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := caps.ParsePublicKey(string(mustPub(key)))
	if len(p.Signatures) != 2 {
		t.Fatalf("%d signatures", len(p.Signatures))
	}
	if who, err := oci.Verify(p.Signatures, p.Artifact.Digest, map[string]*ecdsa.PublicKey{"ops": pub}); err != nil || who != "ops" {
		t.Fatalf("cosign-tag signature: %q %v", who, err)
	}
	if _, err := oci.Verify(p.Signatures[:1], p.Artifact.Digest, map[string]*ecdsa.PublicKey{"ops": pub}); err == nil {
		t.Fatal("a signature of another artifact verified")
	}
}

func mustKey(t *testing.T) []byte {
	priv, _, err := oci.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

func mustPub(k *ecdsa.PrivateKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// TestRedirectToPlainHTTPRefused: a registry that sends a blob's download
// elsewhere over plain HTTP (not loopback) is not followed.
func TestRedirectToPlainHTTPRefused(t *testing.T) {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var redirect atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if redirect.Load() && strings.Contains(r.URL.Path, "/blobs/") {
			http.Redirect(w, r, "http://192.0.2.1/blob", http.StatusTemporaryRedirect)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://")
	mj, mod := pkg("1.0.0")
	ref, err := ocireg.Push(context.Background(), reg+"/aiod/echo:1", mj, mod)
	if err != nil {
		t.Fatal(err)
	}
	redirect.Store(true)
	if _, err := ocireg.Pull(context.Background(), ref); err == nil || !strings.Contains(err.Error(), "refusing a redirect to http://192.0.2.1/blob") {
		t.Fatalf("pull through a plain-HTTP redirect: %v", err)
	}
}

// TestRegistryCredentials: a registry that wants a password gets the one
// of the Docker config file the Client names, and without it refuses.
func TestRegistryCredentials(t *testing.T) {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ops" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="aiod-test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	good := filepath.Join(dir, "config.json")
	os.WriteFile(good, []byte(`{"auths":{"`+reg+`":{"auth":"`+base64.StdEncoding.EncodeToString([]byte("ops:s3cret"))+`"}}}`), 0o600)
	none := filepath.Join(dir, "none.json")
	os.WriteFile(none, []byte(`{"auths":{}}`), 0o600)
	ctx := context.Background()
	mj, mod := pkg("1.0.0")
	c := &ocireg.Client{AuthFile: good}
	ref, err := c.Push(ctx, reg+"/aiod/echo:1", mj, mod)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pull(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := (&ocireg.Client{AuthFile: none}).Pull(ctx, ref); err == nil || !strings.Contains(err.Error(), "basic credential not found") {
		t.Fatalf("without credentials: %v", err)
	}
	if _, err := (&ocireg.Client{AuthFile: filepath.Join(dir, "bad.json")}).Pull(ctx, ref); err == nil || !strings.Contains(err.Error(), "basic credential not found") {
		t.Fatalf("a missing credentials file is anonymous access: %v", err)
	}
}

// TestLyingRegistry: a registry that answers a request for one artifact
// with another's manifest, or a layer with other bytes, is caught by the
// digest check.
func TestLyingRegistry(t *testing.T) {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var swapFrom, swapTo atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if from, _ := swapFrom.Load().(string); from != "" && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, from) {
			r.URL.Path = strings.TrimSuffix(r.URL.Path, from) + swapTo.Load().(string)
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	mj1, mod1 := pkg("1.0.0")
	mj2, mod2 := pkg("2.0.0")
	ref1, _ := ocireg.Push(ctx, reg+"/aiod/echo:1", mj1, mod1)
	ref2, _ := ocireg.Push(ctx, reg+"/aiod/echo:2", mj2, mod2)
	d1, d2 := strings.SplitN(ref1, "@", 2)[1], strings.SplitN(ref2, "@", 2)[1]
	for what, swap := range map[string][2]string{
		"manifest": {d1, d2},
		"module":   {oci.Digest(mod1), oci.Digest(mod2)},
	} {
		swapFrom.Store(swap[0])
		swapTo.Store(swap[1])
		if _, err := ocireg.Pull(ctx, ref1); err == nil || !strings.Contains(err.Error(), "mismatch") {
			t.Errorf("%s swapped: %v", what, err)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestHostileBundles: bundle referrers a registry (or whoever can push to
// it) attaches to an artifact: one declared over 64 KiB or not JSON fails
// the pull before it is used, naming why; a valid bundle of another
// artifact attached to this one is read and then refused by the verifier.
func TestHostileBundles(t *testing.T) {
	reg := serve(t, true)
	ctx := context.Background()
	key, err := oci.ParsePrivateKey(mustKey(t))
	must(t, err)
	pub, _ := caps.ParsePublicKey(string(mustPub(key)))
	cfg := oci.Descriptor{MediaType: oci.EmptyConfigType, Digest: oci.EmptyConfigDigest, Size: 2}
	attach := func(version string, layer oci.Descriptor, blobs ...[]byte) (string, []byte) {
		t.Helper()
		mj, mod := pkg(version)
		ref, err := ocireg.Push(ctx, reg+"/evil/p:"+version, mj, mod)
		must(t, err)
		art, _ := oci.Build(mj, mod)
		pushRaw(t, reg, "bundle-"+version, oci.Manifest{SchemaVersion: 2, MediaType: oci.ImageManifestType, ArtifactType: oci.BundleMediaType,
			Config: cfg, Layers: []oci.Descriptor{layer},
			Subject: &oci.Descriptor{MediaType: oci.ImageManifestType, Digest: oci.Digest(art), Size: int64(len(art))}}, blobs...)
		return ref, art
	}
	huge := bytes.Repeat([]byte(" "), oci.MaxBundleBytes+1)
	ref, _ := attach("1.0.0", oci.Descriptor{MediaType: oci.BundleMediaType, Digest: oci.Digest(huge), Size: int64(len(huge))}, huge)
	if _, err := ocireg.Pull(ctx, ref); err == nil || !strings.Contains(err.Error(), "signature bundle is 65537 bytes, over the 65536 byte limit") {
		t.Errorf("an oversize bundle: %v", err)
	}
	notJSON := []byte("{not json")
	ref, _ = attach("2.0.0", oci.Descriptor{MediaType: oci.BundleMediaType, Digest: oci.Digest(notJSON), Size: int64(len(notJSON))}, notJSON)
	if _, err := ocireg.Pull(ctx, ref); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("a bundle that is not JSON: %v", err)
	}
	other, _ := oci.Build([]byte(`{"abi":1,"name":"other","version":"1","tools":[]}`), []byte("\x00asm\x01\x00\x00\x00"))
	replayed, err := oci.SignBundle(key, other)
	must(t, err)
	ref, art := attach("3.0.0", oci.Descriptor{MediaType: oci.BundleMediaType, Digest: oci.Digest(replayed), Size: int64(len(replayed))}, replayed)
	p, err := ocireg.Pull(ctx, ref)
	must(t, err)
	if len(p.Signatures) != 1 || !bytes.Equal(p.Signatures[0].Bundle, replayed) {
		t.Fatalf("signatures pulled: %+v", p.Signatures)
	}
	if _, err := oci.Verify(p.Signatures, oci.Digest(art), map[string]*ecdsa.PublicKey{"ops": pub}); !errors.Is(err, oci.ErrBadSignature) || !strings.Contains(err.Error(), "not this artifact") {
		t.Fatalf("another artifact's bundle: %v", err)
	}
}
