package hooks

import "github.com/aiodhq/aiod/host/caps"

// GuardEvent is guardEvent for the tests.
func GuardEvent(cfg map[string]string, ev *Event) ([]byte, error) {
	return guardEvent(&caps.Hook{Config: cfg}, ev)
}
