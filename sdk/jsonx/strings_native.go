//go:build !wasip1

package jsonx

import "sync"

var stringsMu sync.Mutex

func lockStrings()   { stringsMu.Lock() }
func unlockStrings() { stringsMu.Unlock() }
