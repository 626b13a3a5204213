package host

import (
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/plugin"
)

// The protocol layer serves any mcp.Catalog; the plugin registry is the
// one the host wires in.
var _ mcp.Catalog = (*plugin.Registry)(nil)

// taskOptions are the tasks extension's bounds from the operator's limits
// (zero fields: the protocol layer's defaults). Read at start-up.
func taskOptions(l caps.OperatorLimits) mcp.TaskOptions {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return mcp.TaskOptions{Grace: ms(l.TaskGraceMs), Deadline: ms(l.DefaultTaskDeadlineMs), MaxDeadline: ms(l.MaxTaskDeadlineMs),
		Retention: ms(l.TaskRetentionMs), MaxPerOwner: l.MaxTasksPerOwner}
}
