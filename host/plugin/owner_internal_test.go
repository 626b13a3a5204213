package plugin

import (
	"testing"

	"github.com/aiodhq/aiod/host/caps"
)

// TestOwnerInstances: an owner's instances quota caps its pools below the
// grant's cap, and never raises them above it.
func TestOwnerInstances(t *testing.T) {
	p := &Plugin{Grant: &caps.Grant{MaxInstances: 8}, ownerMax: func(owner string) int {
		return map[string]int{"alice": 2, "bob": 100}[owner]
	}}
	for owner, want := range map[string]int{"alice": 2, "bob": 8, "carol": 8} {
		if got := cap(p.pool(owner).sem); got != want {
			t.Errorf("%s: pool of %d instances, want %d", owner, got, want)
		}
	}
}
