// Package register is a fixture of the layering test.
package register

import (
	_ "github.com/aiodhq/aiod/host"
	_ "github.com/aiodhq/aiod/host/runtime"
)
