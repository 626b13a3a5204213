// Package deploy is a fixture of the layering test.
package deploy

import (
	_ "github.com/aiodhq/aiod/host/mcp"
)
