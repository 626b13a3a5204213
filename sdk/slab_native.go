//go:build !wasip1

package sdk

import "sync"

// Natively handlers may run on many goroutines at once (tests).
var slabMu sync.Mutex

func lockSlab()   { slabMu.Lock() }
func unlockSlab() { slabMu.Unlock() }
