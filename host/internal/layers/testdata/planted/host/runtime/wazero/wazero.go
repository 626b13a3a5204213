// Package wazero is a fixture of the layering test.
package wazero

import (
	_ "github.com/aiodhq/aiod/host/hostfn/cdp"
	_ "github.com/aiodhq/aiod/host/runtime"
)
