package interrupt

import (
	"crypto/sha256"
	_ "embed"
)

//go:embed interrupt.go
var source []byte

// SourceDigest identifies this rewriter: the sha256 of its source. A cache
// of Instrument's output (host/runtime/wazero, prepared.go) keys on it, so
// that a changed rewriter never serves a module an older one rewrote.
var SourceDigest = sha256.Sum256(source)
