package host

import (
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/plugin"
)

// The protocol layer serves any mcp.Catalog; the plugin registry is the
// one the host wires in.
var _ mcp.Catalog = (*plugin.Registry)(nil)
