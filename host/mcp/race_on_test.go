//go:build race

package mcp

// raceEnabled: the race detector's instrumentation allocates on its own,
// so allocations are not counted under it.
const raceEnabled = true
