// Package server is a fixture of the layering test.
package server

import (
	_ "github.com/aiodhq/aiod/host/mcp"
)
