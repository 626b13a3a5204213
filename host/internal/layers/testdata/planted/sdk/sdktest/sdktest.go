// Package sdktest is a fixture of the layering test.
package sdktest

import (
	_ "github.com/aiodhq/aiod/host/hostfn/files"
	_ "github.com/aiodhq/aiod/host/plugin"
	_ "github.com/aiodhq/aiod/sdk/abi"
)
