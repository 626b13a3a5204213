// Package plugin is a fixture of the layering test.
package plugin

import (
	_ "github.com/aiodhq/aiod/host/hostfn/cdp"
	_ "github.com/aiodhq/aiod/host/hostfn/files"
	_ "github.com/aiodhq/aiod/host/runtime"
)
