// Package hostfn is a fixture of the layering test.
package hostfn

import (
	_ "github.com/aiodhq/aiod/host/browser"
	_ "github.com/aiodhq/aiod/host/caps"
)
