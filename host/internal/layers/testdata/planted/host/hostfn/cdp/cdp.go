// Package cdp is a fixture of the layering test.
package cdp

import (
	_ "github.com/aiodhq/aiod/host/browser"
	_ "github.com/aiodhq/aiod/host/hostfn"
)
