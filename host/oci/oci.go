// Package oci is the format of a plugin package as an OCI artifact and of
// its signatures (spec/oci.md): the artifact's manifest, built and parsed
// with its bounds, a package directory's record of the artifact it came
// from, and its signatures with ECDSA P-256: sigstore bundles (bundle.go,
// sigstore's own protobuf types and signature package), and cosign's
// older simple-signing signatures (sign.go). It reads and writes bytes only;
// host/oci/registry moves them to and from a registry.
package oci

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// Media types of the artifact (spec/oci.md §1).
const (
	// ArtifactType is the manifest's artifactType: an aiod plugin package.
	ArtifactType = "application/vnd.aiod.plugin.v1+json"
	// ManifestLayerType is the layer holding the package's manifest.json.
	ManifestLayerType = "application/vnd.aiod.plugin.manifest.v1+json"
	// ModuleLayerType is the layer holding the package's module.
	ModuleLayerType = "application/vnd.aiod.plugin.module.v1+wasm"
	// ImageManifestType is the OCI image manifest the artifact is.
	ImageManifestType = "application/vnd.oci.image.manifest.v1+json"
	// EmptyConfigType is the OCI empty config ("{}") every artifact has.
	EmptyConfigType = "application/vnd.oci.empty.v1+json"
)

// EmptyConfigDigest is the digest of the empty config, "{}".
const EmptyConfigDigest = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"

// Bounds on what is read from a registry.
const (
	// MaxArtifactBytes bounds the artifact's own manifest (and a
	// signature's).
	MaxArtifactBytes = 64 << 10
	// MaxManifestBytes bounds the package's manifest.json layer.
	MaxManifestBytes = 1 << 20
	// MaxModuleBytes bounds the module layer (as the host bounds a
	// module read from a directory).
	MaxModuleBytes = 256 << 20
)

// Files a pulled package keeps beside manifest.json and its module.
const (
	// ArtifactFile is the artifact's manifest, byte for byte: its sha256
	// is the digest signatures sign.
	ArtifactFile = "artifact.json"
	// SignaturesFile holds the signatures found for the artifact.
	SignaturesFile = "signatures.json"
)

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType    string            `json:"mediaType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	ArtifactType string            `json:"artifactType,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

// Manifest is an OCI image manifest, as this package reads and writes
// one.
type Manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	ArtifactType  string            `json:"artifactType,omitempty"`
	Config        Descriptor        `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Subject       *Descriptor       `json:"subject,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Artifact is a parsed plugin artifact: its manifest's two layers.
type Artifact struct {
	Digest   string // sha256:<hex> of the artifact's manifest
	Manifest Descriptor
	Module   Descriptor
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidDigest reports whether d is "sha256:" and 64 lowercase hex digits.
func ValidDigest(d string) bool { return digestRE.MatchString(d) }

// Digest is the OCI digest of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Build makes the artifact manifest of a package: manifest.json and the
// module as its two layers, in that order. The same package always makes
// the same bytes (so the same digest).
func Build(manifestJSON, module []byte) ([]byte, error) {
	if len(manifestJSON) > MaxManifestBytes {
		return nil, fmt.Errorf("manifest.json is %d bytes, over the %d byte limit", len(manifestJSON), MaxManifestBytes)
	}
	if len(module) > MaxModuleBytes {
		return nil, fmt.Errorf("module is %d bytes, over the %d byte limit", len(module), MaxModuleBytes)
	}
	m := Manifest{
		SchemaVersion: 2, MediaType: ImageManifestType, ArtifactType: ArtifactType,
		Config: Descriptor{MediaType: EmptyConfigType, Digest: EmptyConfigDigest, Size: 2},
		Layers: []Descriptor{
			{MediaType: ManifestLayerType, Digest: Digest(manifestJSON), Size: int64(len(manifestJSON))},
			{MediaType: ModuleLayerType, Digest: Digest(module), Size: int64(len(module))},
		},
	}
	return json.Marshal(m)
}

// Parse reads an artifact manifest from a registry (untrusted bytes) and
// checks it is a plugin package: an OCI image manifest of artifactType
// ArtifactType, the empty config, and exactly two layers, manifest.json
// then the module, each within its bound.
func Parse(b []byte) (*Artifact, error) {
	if len(b) > MaxArtifactBytes {
		return nil, fmt.Errorf("artifact manifest is %d bytes, over the %d byte limit", len(b), MaxArtifactBytes)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("artifact manifest: %w", err)
	}
	if dec.More() {
		return nil, errors.New("artifact manifest: trailing data after the JSON object")
	}
	switch {
	case m.SchemaVersion != 2:
		return nil, fmt.Errorf("artifact manifest: schemaVersion %d, want 2", m.SchemaVersion)
	case m.MediaType != ImageManifestType:
		return nil, fmt.Errorf("artifact manifest: mediaType %q, want %q", m.MediaType, ImageManifestType)
	case m.ArtifactType != ArtifactType:
		return nil, fmt.Errorf("not an aiod plugin: artifactType %q, want %q", m.ArtifactType, ArtifactType)
	case m.Config.MediaType != EmptyConfigType || m.Config.Digest != EmptyConfigDigest || m.Config.Size != 2:
		return nil, fmt.Errorf("artifact manifest: config must be the empty config (%s, %s, 2 bytes)", EmptyConfigType, EmptyConfigDigest)
	case len(m.Layers) != 2:
		return nil, fmt.Errorf("artifact manifest: %d layers, want exactly 2 (%s, %s)", len(m.Layers), ManifestLayerType, ModuleLayerType)
	}
	want := []struct {
		typ string
		max int64
	}{{ManifestLayerType, MaxManifestBytes}, {ModuleLayerType, MaxModuleBytes}}
	for i, l := range m.Layers {
		switch {
		case l.MediaType != want[i].typ:
			return nil, fmt.Errorf("artifact manifest: layer %d has mediaType %q, want %q", i, l.MediaType, want[i].typ)
		case !ValidDigest(l.Digest):
			return nil, fmt.Errorf("artifact manifest: layer %d: digest %q is not sha256:<64 hex digits>", i, l.Digest)
		case l.Size < 0:
			return nil, fmt.Errorf("artifact manifest: layer %d: negative size", i)
		case l.Size > want[i].max:
			return nil, fmt.Errorf("artifact manifest: layer %d (%s) is %d bytes, over the %d byte limit", i, l.MediaType, l.Size, want[i].max)
		}
	}
	return &Artifact{Digest: Digest(b), Manifest: m.Layers[0], Module: m.Layers[1]}, nil
}

// Check parses artifact and checks that manifestJSON and the module whose
// hex sha256 is moduleSHA256 are its layers: what a package directory
// holds is what the artifact names.
func Check(artifact, manifestJSON []byte, moduleSHA256 string) (*Artifact, error) {
	a, err := Parse(artifact)
	if err != nil {
		return nil, err
	}
	if d := Digest(manifestJSON); d != a.Manifest.Digest {
		return nil, fmt.Errorf("manifest.json (%s) is not the artifact's manifest layer (%s)", d, a.Manifest.Digest)
	}
	if d := "sha256:" + moduleSHA256; d != a.Module.Digest {
		return nil, fmt.Errorf("the module (%s) is not the artifact's module layer (%s)", d, a.Module.Digest)
	}
	return a, nil
}
