// Package abi is a fixture of the layering test.
package abi

import (
	_ "github.com/aiodhq/aiod/host/caps"
)
