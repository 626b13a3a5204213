// Package runtime is a fixture of the layering test.
package runtime

import (
	_ "github.com/aiodhq/aiod/host/hostfn"
)
