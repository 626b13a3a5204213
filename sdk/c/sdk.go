// Package c holds the C SDK, aiod.h (header-only), for `aiod plugin new
// --lang c` to copy into a new project. It is not a Go API.
package c

import _ "embed"

// Header is aiod.h.
//
//go:embed aiod.h
var Header []byte
