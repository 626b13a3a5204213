// Package mcp is a fixture of the layering test.
package mcp

import (
	_ "github.com/aiodhq/aiod/host/hostfn"
)
