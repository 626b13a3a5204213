package plugin

import "time"

// SetColdCompile sets how long a start-up compile runs before the loaders
// take the core left to calls, and returns the function restoring it.
func SetColdCompile(d time.Duration) (restore func()) {
	old := coldCompile
	coldCompile = d
	return func() { coldCompile = old }
}

// ModuleReads counts the modules read so far.
func ModuleReads() int64 { return moduleReads.Load() }

// ModuleHashes counts the modules read and hashed so far.
func ModuleHashes() int64 { return moduleHashes.Load() }

// SetPrewarmBudget sets how long prewarm may delay a swap, and returns the
// function restoring it.
func SetPrewarmBudget(d time.Duration) (restore func()) {
	old := prewarmBudget
	prewarmBudget = d
	return func() { prewarmBudget = old }
}

// SetWakeDelay makes every wake of a dormant module take d longer, and
// returns the function restoring it.
func SetWakeDelay(d time.Duration) (restore func()) {
	old := wakeDelay.Swap(int64(d))
	return func() { wakeDelay.Store(old) }
}
