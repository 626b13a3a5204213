// Package ocireg moves plugin packages to and from OCI registries with
// oras-go (spec/oci.md): push a package as an artifact, pull one by
// reference (every manifest and layer bounded and checked against its
// digest), sign one (a cosign simple-signing signature pushed as a
// referrer), and fetch one into a content-addressed cache. Plain HTTP is
// used only for a registry on loopback; any other needs TLS.
package ocireg

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/netx"
	"github.com/aiodhq/aiod/host/oci"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Timeout bounds one registry operation of a fetch.
const Timeout = 2 * time.Minute

// Open returns the repository of ref (REGISTRY/REPOSITORY[:TAG][@DIGEST],
// an optional "oci://" prefix dropped) and the parsed reference. Plain
// HTTP only for a loopback registry.
func (c *Client) Open(ref string) (*remote.Repository, registry.Reference, error) {
	ref = strings.TrimPrefix(ref, "oci://")
	r, err := registry.ParseReference(ref)
	if err != nil {
		return nil, registry.Reference{}, fmt.Errorf("reference %q: %w", ref, err)
	}
	repo, err := remote.NewRepository(r.Registry + "/" + r.Repository)
	if err != nil {
		return nil, registry.Reference{}, err
	}
	repo.PlainHTTP = PlainHTTP(r.Registry)
	repo.MaxMetadataBytes = oci.MaxArtifactBytes
	hc := &http.Client{Timeout: Timeout, CheckRedirect: checkRedirect}
	store, err := c.store()
	if err != nil {
		return nil, registry.Reference{}, err
	}
	repo.Client = &auth.Client{Client: hc, Credential: credentials.Credential(store), Cache: auth.NewCache()}
	return repo, r, nil
}

// Client reaches registries with the credentials of a Docker config
// file. The zero Client reads Docker's own ($DOCKER_CONFIG/config.json,
// else ~/.docker/config.json); a missing file means anonymous access.
type Client struct {
	// AuthFile is the Docker config file to read credentials from ("":
	// Docker's).
	AuthFile string
}

// Default is the zero Client, which the package's functions use.
var Default = &Client{}

// Open is Default.Open.
func Open(ref string) (*remote.Repository, registry.Reference, error) { return Default.Open(ref) }

// Push is Default.Push.
func Push(ctx context.Context, ref string, manifestJSON, module []byte) (string, error) {
	return Default.Push(ctx, ref, manifestJSON, module)
}

// Pull is Default.Pull.
func Pull(ctx context.Context, ref string) (*Pulled, error) { return Default.Pull(ctx, ref) }

// Sign is Default.Sign.
func Sign(ctx context.Context, ref string, key *ecdsa.PrivateKey) (string, string, error) {
	return Default.Sign(ctx, ref, key)
}

// Fetch is Default.Fetch.
func Fetch(ctx context.Context, ref, cacheDir string, refresh bool) (string, error, error) {
	return Default.Fetch(ctx, ref, cacheDir, refresh)
}

// store reads the credentials file (each time: it may have changed).
func (c *Client) store() (credentials.Store, error) {
	if c.AuthFile != "" {
		s, err := credentials.NewStore(c.AuthFile, credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("registry credentials %s: %w", c.AuthFile, err)
		}
		return s, nil
	}
	s, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("registry credentials (Docker's config): %w", err)
	}
	return s, nil
}

// checkRedirect follows a registry's redirect (to its blob storage, say)
// only over HTTPS, or plain HTTP to loopback.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Scheme != "https" && !(req.URL.Scheme == "http" && PlainHTTP(req.URL.Host)) {
		return fmt.Errorf("refusing a redirect to %s: plain HTTP only to loopback", req.URL.Redacted())
	}
	return nil
}

// PlainHTTP reports whether a registry (host or host:port) is spoken to
// over plain HTTP: only when it is on loopback.
func PlainHTTP(hostport string) bool {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		h = hostport
	}
	return netx.Loopback(h)
}

// Push pushes a package (its manifest.json and module) as an artifact to
// ref, tagged with ref's tag if it has one, and returns the artifact's
// reference by digest (REGISTRY/REPOSITORY@sha256:...).
func (c *Client) Push(ctx context.Context, ref string, manifestJSON, module []byte) (string, error) {
	art, err := oci.Build(manifestJSON, module)
	if err != nil {
		return "", err
	}
	repo, r, err := c.Open(ref)
	if err != nil {
		return "", err
	}
	for _, b := range []struct {
		typ  string
		data []byte
	}{{oci.EmptyConfigType, []byte("{}")}, {oci.ManifestLayerType, manifestJSON}, {oci.ModuleLayerType, module}} {
		desc := content.NewDescriptorFromBytes(b.typ, b.data)
		if ok, err := repo.Exists(ctx, desc); err == nil && ok {
			continue
		}
		if err := repo.Push(ctx, desc, bytes.NewReader(b.data)); err != nil {
			return "", fmt.Errorf("push %s: %w", b.typ, err)
		}
	}
	desc := content.NewDescriptorFromBytes(oci.ImageManifestType, art)
	if tag := r.Reference; tag != "" && !strings.HasPrefix(tag, "sha256:") {
		err = repo.PushReference(ctx, desc, bytes.NewReader(art), tag)
	} else {
		if tag != "" && tag != desc.Digest.String() {
			return "", fmt.Errorf("reference %s names digest %s, but the package's artifact is %s", ref, tag, desc.Digest)
		}
		err = repo.Push(ctx, desc, bytes.NewReader(art))
	}
	if err != nil {
		return "", fmt.Errorf("push artifact manifest: %w", err)
	}
	return r.Registry + "/" + r.Repository + "@" + desc.Digest.String(), nil
}

// Pulled is a package read from a registry.
type Pulled struct {
	// Ref is the artifact's reference by digest.
	Ref          string
	Artifact     *oci.Artifact
	ArtifactJSON []byte
	ManifestJSON []byte
	Module       []byte
	// Manifest is ManifestJSON parsed and validated.
	Manifest   *abi.Manifest
	Signatures []oci.Signature
}

// resolve returns the descriptor of ref's artifact manifest, refusing
// one over its bound before it is read.
func resolve(ctx context.Context, repo *remote.Repository, r registry.Reference) (ocispec.Descriptor, error) {
	if r.Reference == "" {
		return ocispec.Descriptor{}, fmt.Errorf("reference %s names no tag or digest", r)
	}
	desc, err := repo.Resolve(ctx, r.Reference)
	if err != nil {
		return desc, fmt.Errorf("resolve %s: %w", r, err)
	}
	if desc.Size > oci.MaxArtifactBytes {
		return desc, fmt.Errorf("%s: artifact manifest is %d bytes, over the %d byte limit", r, desc.Size, oci.MaxArtifactBytes)
	}
	if d, err := r.Digest(); err == nil && d != desc.Digest {
		return desc, fmt.Errorf("%s: the registry answered digest %s", r, desc.Digest)
	}
	return desc, nil
}

// fetch reads desc's content, bounded by max and checked against its
// size and digest.
func fetch(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, max int64, what string) ([]byte, error) {
	if desc.Size > max {
		return nil, fmt.Errorf("%s is %d bytes, over the %d byte limit", what, desc.Size, max)
	}
	var rc io.ReadCloser
	var err error
	switch desc.MediaType {
	case oci.ImageManifestType, ocispec.MediaTypeImageIndex, dockerManifestType:
		rc, err = repo.Manifests().Fetch(ctx, desc)
	default:
		rc, err = repo.Blobs().Fetch(ctx, desc)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", what, err)
	}
	defer rc.Close()
	b, err := content.ReadAll(io.LimitReader(rc, max+1), desc)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", what, err)
	}
	return b, nil
}

// Pull reads the package ref names (by tag or digest), and its signatures.
func (c *Client) Pull(ctx context.Context, ref string) (*Pulled, error) {
	repo, r, err := c.Open(ref)
	if err != nil {
		return nil, err
	}
	desc, err := resolve(ctx, repo, r)
	if err != nil {
		return nil, err
	}
	desc.MediaType = oci.ImageManifestType
	artJSON, err := fetch(ctx, repo, desc, oci.MaxArtifactBytes, "artifact manifest")
	if err != nil {
		return nil, err
	}
	art, err := oci.Parse(artJSON)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	p := &Pulled{Ref: r.Registry + "/" + r.Repository + "@" + art.Digest, Artifact: art, ArtifactJSON: artJSON}
	if p.ManifestJSON, err = fetch(ctx, repo, layer(art.Manifest), oci.MaxManifestBytes, "manifest.json layer"); err != nil {
		return nil, err
	}
	if p.Manifest, err = caps.ParseManifest(p.ManifestJSON); err != nil {
		return nil, fmt.Errorf("%s: manifest.json layer: %w", r, err)
	}
	if p.Module, err = fetch(ctx, repo, layer(art.Module), oci.MaxModuleBytes, "module layer"); err != nil {
		return nil, err
	}
	if p.Manifest.SHA256 != "" && "sha256:"+p.Manifest.SHA256 != art.Module.Digest {
		return nil, fmt.Errorf("%s: manifest.json pins the module to sha256 %s, but the module layer is %s", r, p.Manifest.SHA256, art.Module.Digest)
	}
	if p.Signatures, err = signatures(ctx, repo, desc); err != nil {
		return nil, err
	}
	return p, nil
}

func layer(d oci.Descriptor) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: d.MediaType, Digest: digest.Digest(d.Digest), Size: d.Size}
}

// dockerManifestType is the Docker image manifest cosign may store its
// signatures in.
const dockerManifestType = "application/vnd.docker.distribution.manifest.v2+json"

// maxReferrers bounds the referrers, and the signatures, read of one
// artifact.
const maxReferrers = 16

// signatures reads the signatures of subject: the sigstore bundles and
// cosign simple-signing signatures among its referrers, and those of the
// manifest tagged sha256-<hex>.sig, where cosign put simple-signing ones
// before bundles (one manifest whose layers are the signatures). Every
// referrer is listed and its manifest's own artifactType checked:
// registries differ in what they report as a referrer's artifactType
// (go-containerregistry's reports the config's media type), and in
// whether they filter by it.
func signatures(ctx context.Context, repo *remote.Repository, subject ocispec.Descriptor) ([]oci.Signature, error) {
	var refs []ocispec.Descriptor
	err := repo.Referrers(ctx, subject, "", func(page []ocispec.Descriptor) error {
		refs = append(refs, page...)
		if len(refs) > maxReferrers {
			return fmt.Errorf("more than %d signatures", maxReferrers)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("signatures of %s: %w", subject.Digest, err)
	}
	seen := map[digest.Digest]bool{}
	var out []oci.Signature
	read := func(d ocispec.Descriptor, referrer bool) error {
		if seen[d.Digest] {
			return nil
		}
		seen[d.Digest] = true
		b, err := fetch(ctx, repo, d, oci.MaxArtifactBytes, "signature manifest")
		if err != nil {
			return err
		}
		var m oci.Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("signature manifest %s: %w", d.Digest, err)
		}
		bundle := m.ArtifactType == oci.BundleMediaType
		if referrer && (!bundle && m.ArtifactType != oci.SignatureArtifactType || m.Subject == nil || m.Subject.Digest != subject.Digest.String()) {
			return nil
		}
		for _, l := range m.Layers {
			if !oci.ValidDigest(l.Digest) || (bundle && l.MediaType != oci.BundleMediaType) || (!bundle && l.MediaType != oci.SimpleSigningType) {
				continue
			}
			if len(out) == maxReferrers {
				return fmt.Errorf("signatures of %s: more than %d signatures", subject.Digest, maxReferrers)
			}
			if bundle {
				b, err := fetch(ctx, repo, layer(l), oci.MaxBundleBytes, "signature bundle")
				if err != nil {
					return err
				}
				if !json.Valid(b) {
					return fmt.Errorf("signature bundle %s: not JSON", l.Digest)
				}
				out = append(out, oci.Signature{Bundle: b})
				continue
			}
			payload, err := fetch(ctx, repo, layer(l), oci.MaxPayloadBytes, "signature payload")
			if err != nil {
				return err
			}
			out = append(out, oci.Signature{Payload: payload, Signature: l.Annotations[oci.SignatureAnnotation]})
		}
		return nil
	}
	for _, d := range refs {
		d.MediaType = oci.ImageManifestType
		if err := read(d, true); err != nil {
			return nil, err
		}
	}
	tag := strings.Replace(subject.Digest.String(), ":", "-", 1) + ".sig"
	if d, err := repo.Resolve(ctx, tag); err == nil {
		if err := read(d, false); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, errdef.ErrNotFound) {
		return nil, fmt.Errorf("signatures of %s: %s: %w", subject.Digest, tag, err)
	}
	return out, nil
}

// Sign signs the artifact ref names with key and pushes the signature
// as cosign 3 attaches a sigstore bundle: the bundle (oci.SignBundle) as
// the one layer of a manifest of artifactType oci.BundleMediaType whose
// subject is the artifact, found through the referrers API (or the
// referrers tag schema, which oras-go keeps on registries without it).
// It returns the artifact's reference by digest and the bundle
// manifest's digest.
func (c *Client) Sign(ctx context.Context, ref string, key *ecdsa.PrivateKey) (string, string, error) {
	repo, r, err := c.Open(ref)
	if err != nil {
		return "", "", err
	}
	desc, err := resolve(ctx, repo, r)
	if err != nil {
		return "", "", err
	}
	desc.MediaType = oci.ImageManifestType
	artJSON, err := fetch(ctx, repo, desc, oci.MaxArtifactBytes, "artifact manifest")
	if err != nil {
		return "", "", err
	}
	if _, err := oci.Parse(artJSON); err != nil {
		return "", "", fmt.Errorf("%s: %w", r, err)
	}
	bundle, err := oci.SignBundle(key, artJSON)
	if err != nil {
		return "", "", err
	}
	bdesc := content.NewDescriptorFromBytes(oci.BundleMediaType, bundle)
	if err := repo.Push(ctx, bdesc, bytes.NewReader(bundle)); err != nil {
		return "", "", fmt.Errorf("push signature bundle: %w", err)
	}
	empty := content.NewDescriptorFromBytes(oci.EmptyConfigType, []byte("{}"))
	if ok, err := repo.Exists(ctx, empty); err != nil || !ok {
		if err := repo.Push(ctx, empty, bytes.NewReader([]byte("{}"))); err != nil {
			return "", "", fmt.Errorf("push empty config: %w", err)
		}
	}
	m := oci.Manifest{SchemaVersion: 2, MediaType: oci.ImageManifestType, ArtifactType: oci.BundleMediaType,
		Config: oci.Descriptor{MediaType: oci.EmptyConfigType, Digest: oci.EmptyConfigDigest, Size: 2},
		Layers: []oci.Descriptor{{MediaType: oci.BundleMediaType, Digest: bdesc.Digest.String(), Size: bdesc.Size,
			Annotations: map[string]string{ocispec.AnnotationTitle: strings.Replace(bdesc.Digest.String(), ":", "-", 1) + ".sigstore.json"}}},
		Subject:     &oci.Descriptor{MediaType: oci.ImageManifestType, Digest: desc.Digest.String(), Size: desc.Size},
		Annotations: map[string]string{oci.BundleContentAnnotation: "message-signature", ocispec.AnnotationCreated: time.Now().UTC().Format(time.RFC3339)}}
	mb, err := json.Marshal(m)
	if err != nil {
		return "", "", err
	}
	sdesc := content.NewDescriptorFromBytes(oci.ImageManifestType, mb)
	sdesc.ArtifactType = oci.BundleMediaType
	sdesc.Annotations = m.Annotations
	if err := repo.Push(ctx, sdesc, bytes.NewReader(mb)); err != nil {
		return "", "", fmt.Errorf("push signature: %w", err)
	}
	return r.Registry + "/" + r.Repository + "@" + desc.Digest.String(), sdesc.Digest.String(), nil
}

// WritePackage writes p as the package directory dir (manifest.json, the
// module, oci.ArtifactFile and oci.SignaturesFile), atomically: staged
// beside it under a dot name and renamed into place. An existing dir is
// replaced only with force.
func WritePackage(dir string, p *Pulled, force bool) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	if _, err := os.Lstat(dir); err == nil && !force {
		return fmt.Errorf("%s exists (--force replaces it)", dir)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".pull-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	mod := p.Manifest.Module
	if mod == "" {
		mod = "plugin.wasm"
	}
	switch mod {
	case "manifest.json", oci.ArtifactFile, oci.SignaturesFile:
		return fmt.Errorf("manifest.json: module %q is a name the package uses for something else", mod)
	}
	sigs, err := json.Marshal(p.Signatures)
	if err != nil {
		return err
	}
	if p.Signatures == nil {
		sigs = []byte("[]")
	}
	for name, b := range map[string][]byte{"manifest.json": p.ManifestJSON, mod: p.Module, oci.ArtifactFile: p.ArtifactJSON, oci.SignaturesFile: sigs} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if force {
		old := tmp + ".old"
		if err := os.Rename(dir, old); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		defer os.RemoveAll(old)
	}
	return os.Rename(tmp, dir)
}
