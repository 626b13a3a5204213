package oci_test

import (
	"crypto/ecdsa"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/oci"
)

// sigstoreJS runs testdata/sigstore-js.cjs (sigstore-js's signing and
// verifying libraries, from the pinned Node tools that
// host/e2e/testdata/install.sh installs) with args.
func sigstoreJS(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs Node 22 and sigstore-js from the pinned Node tools: make test installs them, make test-short does not")
	}
	nodeBin := testplugins.NodeTools(t)
	modules := testplugins.NodeModules(nodeBin)
	cmd := exec.Command(filepath.Join(nodeBin, "node"), append([]string{filepath.Join("testdata", "sigstore-js.cjs")}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%w: %s", err, stderr.String())
	}
	return string(out), nil
}

// TestSigstoreJS: aiod's bundles and sigstore-js's, each verified by the
// other, offline, with a public key as the only trust material (no
// Fulcio, Rekor or TUF): sigstore-js verifies the bundle aiod signs
// (and refuses it for another artifact and with another key); aiod
// verifies sigstore-js's message-signature bundle over the artifact and
// its DSSE bundle of an in-toto statement naming the artifact, and
// refuses them for another artifact or key.
func TestSigstoreJS(t *testing.T) {
	dir := t.TempDir()
	privPEM, pubPEM, err := oci.GenerateKey(rand.Reader)
	must(t, err)
	_, otherPEM, _ := oci.GenerateKey(rand.Reader)
	key, _ := oci.ParsePrivateKey(privPEM)
	pub, _ := caps.ParsePublicKey(string(pubPEM))
	otherPub, _ := caps.ParsePublicKey(string(otherPEM))
	art, _ := oci.Build(testManifest, testModule)
	otherArt, _ := oci.Build([]byte(`{"abi":1,"name":"other","version":"1","tools":[]}`), testModule)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, b, 0o600))
		return p
	}
	privFile, pubFile, otherFile := write("ops.key", privPEM), write("ops.pub", pubPEM), write("other.pub", otherPEM)
	artFile, otherArtFile := write("artifact.json", art), write("other.json", otherArt)

	// aiod signs, sigstore-js verifies
	bundle, err := oci.SignBundle(key, art)
	must(t, err)
	bundleFile := write("aiod.sigstore.json", bundle)
	if out, err := sigstoreJS(t, "verify", bundleFile, artFile, pubFile); err != nil || out != "verified\n" {
		t.Fatalf("sigstore-js refuses aiod's bundle: %q %v\n%s", out, err, bundle)
	}
	if out, err := sigstoreJS(t, "verify", bundleFile, otherArtFile, pubFile); err == nil {
		t.Fatalf("sigstore-js verified aiod's bundle for another artifact: %q", out)
	}
	if out, err := sigstoreJS(t, "verify", bundleFile, artFile, otherFile); err == nil || !strings.Contains(err.Error(), "SIGNATURE") {
		t.Fatalf("sigstore-js with another key: %q %v", out, err)
	}

	// sigstore-js signs, aiod verifies
	trusted := map[string]*ecdsa.PublicKey{"ops": pub}
	digest := oci.Digest(art)
	js, err := sigstoreJS(t, "sign", artFile, privFile, pubFile)
	if err != nil {
		t.Fatalf("sigstore-js sign: %v", err)
	}
	dsse, err := sigstoreJS(t, "attest", digest, privFile, pubFile)
	if err != nil {
		t.Fatalf("sigstore-js attest: %v", err)
	}
	if !strings.Contains(js, `"messageSignature"`) || !strings.Contains(dsse, `"dsseEnvelope"`) || !strings.Contains(dsse, oci.BundleMediaType) {
		t.Fatalf("sigstore-js's bundles:\n%s\n%s", js, dsse)
	}
	for name, b := range map[string]string{"message signature": js, "DSSE": dsse} {
		if who, err := oci.Verify([]oci.Signature{{Bundle: []byte(b)}}, digest, trusted); err != nil || who != "ops" {
			t.Errorf("aiod refuses sigstore-js's %s bundle: %q %v\n%s", name, who, err, b)
		}
		if _, err := oci.Verify([]oci.Signature{{Bundle: []byte(b)}}, oci.Digest(otherArt), trusted); !errors.Is(err, oci.ErrBadSignature) {
			t.Errorf("sigstore-js's %s bundle verified for another artifact: %v", name, err)
		}
		if _, err := oci.Verify([]oci.Signature{{Bundle: []byte(b)}}, digest, map[string]*ecdsa.PublicKey{"other": otherPub}); !errors.Is(err, oci.ErrBadSignature) {
			t.Errorf("sigstore-js's %s bundle verified with another key: %v", name, err)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
