// Package files is a fixture of the layering test.
package files

import (
	_ "github.com/aiodhq/aiod/host/hostfn"
)
