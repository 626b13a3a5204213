// Package assemblyscript holds the AssemblyScript SDK, aiod.ts, for `aiod
// plugin new --lang assemblyscript` to copy into a new project. It is not a
// Go API.
package assemblyscript

import _ "embed"

// Source is aiod.ts.
//
//go:embed aiod.ts
var Source []byte
