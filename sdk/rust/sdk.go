// Package rust holds the Rust SDK, lib.rs (one module, no dependencies),
// for `aiod plugin new --lang rust` to copy into a new project as aiod.rs.
// It is not a Go API.
package rust

import _ "embed"

// Source is lib.rs.
//
//go:embed lib.rs
var Source []byte
