package ocireg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/oci"
)

// Fetch returns the package directory of ref, a reference by digest, in
// the cache cacheDir (cacheDir/sha256-<hex>/<plugin name>), pulling it
// when it is not there. A cached package is checked against its artifact
// (the artifact's digest is ref's, its layers are the files) and used
// without the registry; with refresh its signatures are read again from
// the registry, and a registry that does not answer leaves the cached
// ones (warn says why).
func (c *Client) Fetch(ctx context.Context, ref, cacheDir string, refresh bool) (dir string, warn, err error) {
	_, r, err := c.Open(ref)
	if err != nil {
		return "", nil, err
	}
	want, err := r.Digest()
	if err != nil {
		return "", nil, fmt.Errorf("reference %s: name the artifact by digest (REPOSITORY@sha256:...)", ref)
	}
	entry := filepath.Join(cacheDir, strings.Replace(want.String(), ":", "-", 1))
	if dir, err := cached(entry, want.String()); err == nil {
		if refresh {
			warn = c.refreshSignatures(ctx, ref, dir)
		}
		return dir, warn, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		// a damaged entry is fetched again
		warn = fmt.Errorf("cached %s: %w; fetched again", entry, err)
		if err := os.RemoveAll(entry); err != nil {
			return "", warn, err
		}
	}
	p, err := c.Pull(ctx, ref)
	if err != nil {
		return "", warn, err
	}
	if p.Artifact.Digest != want.String() {
		return "", warn, fmt.Errorf("%s: the registry served artifact %s", ref, p.Artifact.Digest)
	}
	if err := os.MkdirAll(entry, 0o755); err != nil {
		return "", warn, err
	}
	dir = filepath.Join(entry, p.Manifest.Name)
	if err := WritePackage(dir, p, true); err != nil {
		return "", warn, err
	}
	return dir, warn, nil
}

// cached returns the package directory of a cache entry whose files are
// the artifact digest names; fs.ErrNotExist when there is none.
func cached(entry, digest string) (string, error) {
	ents, err := os.ReadDir(entry)
	if err != nil {
		return "", err
	}
	var dir string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			if dir != "" {
				return "", errors.New("more than one package")
			}
			dir = filepath.Join(entry, e.Name())
		}
	}
	if dir == "" {
		return "", fs.ErrNotExist
	}
	art, err := os.ReadFile(filepath.Join(dir, oci.ArtifactFile))
	if err != nil {
		return "", err
	}
	if oci.Digest(art) != digest {
		return "", fmt.Errorf("%s is not artifact %s", oci.ArtifactFile, digest)
	}
	mj, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return "", err
	}
	m, err := caps.ParseManifest(mj)
	if err != nil {
		return "", err
	}
	mod := m.Module
	if mod == "" {
		mod = "plugin.wasm"
	}
	wasm, err := os.ReadFile(filepath.Join(dir, mod))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(wasm)
	if _, err := oci.Check(art, mj, hex.EncodeToString(sum[:])); err != nil {
		return "", err
	}
	if m.Name != filepath.Base(dir) {
		return "", fmt.Errorf("holds plugin %s in %s", m.Name, dir)
	}
	return dir, nil
}

// refreshSignatures reads ref's signatures from the registry into dir's
// signatures file.
func (c *Client) refreshSignatures(ctx context.Context, ref, dir string) error {
	repo, r, err := c.Open(ref)
	if err != nil {
		return err
	}
	desc, err := resolve(ctx, repo, r)
	if err != nil {
		return fmt.Errorf("signatures not refreshed, the cached ones apply: %w", err)
	}
	sigs, err := signatures(ctx, repo, desc)
	if err != nil {
		return fmt.Errorf("signatures not refreshed, the cached ones apply: %w", err)
	}
	if sigs == nil {
		sigs = []oci.Signature{}
	}
	b, err := json.Marshal(sigs)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+oci.SignaturesFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, oci.SignaturesFile))
}
