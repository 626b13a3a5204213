package caps

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
)

// TestGrantRulesCoverFamilies: every field of abi.Capabilities is a family
// in abi.Families, Has sees it, and grantRules has its rule, in order; so
// a family added to the contract without a grant rule (or the reverse)
// fails here instead of being silently never granted.
func TestGrantRulesCoverFamilies(t *testing.T) {
	ct := reflect.TypeFor[abi.Capabilities]()
	if ct.NumField() != len(abi.Families) {
		t.Fatalf("abi.Capabilities has %d fields, abi.Families %d", ct.NumField(), len(abi.Families))
	}
	if len(grantRules) != len(abi.Families) {
		t.Fatalf("%d grant rules for %d families", len(grantRules), len(abi.Families))
	}
	for i := range ct.NumField() {
		f := ct.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fam := abi.Family(name)
		if abi.Families[i] != fam || grantRules[i].family != fam {
			t.Errorf("field %s (%q): abi.Families[%d] = %q, grantRules[%d] = %q", f.Name, name, i, abi.Families[i], i, grantRules[i].family)
		}
		var c abi.Capabilities
		if c.Has(fam) {
			t.Errorf("empty capabilities have %s", fam)
		}
		v := reflect.ValueOf(&c).Elem().Field(i)
		v.Set(reflect.New(f.Type.Elem()))
		if !c.Has(fam) {
			t.Errorf("Has(%s) false with %s set", fam, f.Name)
		}
	}
}
