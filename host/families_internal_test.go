package host

import (
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
)

// TestFamilyTableComplete: every gated family of the contract is
// implemented by this host, in abi.Families order, and AllFamilies (the
// describe stubs) names each once.
func TestFamilyTableComplete(t *testing.T) {
	if len(familyTable) != len(abi.Families) {
		t.Fatalf("familyTable has %d families, the contract %d", len(familyTable), len(abi.Families))
	}
	for i, f := range abi.Families {
		if familyTable[i].name != f || !implemented(f) {
			t.Errorf("familyTable[%d] = %q, want %q", i, familyTable[i].name, f)
		}
	}
	for i, f := range AllFamilies() {
		if f.Name() != abi.Families[i] {
			t.Errorf("AllFamilies()[%d] = %q, want %q", i, f.Name(), abi.Families[i])
		}
	}
}
