// Package host is a fixture of the layering test.
package host

import (
	_ "github.com/aiodhq/aiod/host/plugin"
	_ "github.com/aiodhq/aiod/host/runtime/wazero"
	_ "github.com/aiodhq/aiod/host/server"
)
