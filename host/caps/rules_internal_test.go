package caps

import (
	"reflect"
	"strings"
	"testing"
	"time"

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

func TestMatchPattern(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"Page.navigate", "Page.navigate", true},
		{"Page.navigate", "Page.navigateX", false},
		{"Page.*", "Page.navigate", true},
		{"Page.*", "Page.", true},
		{"Page.*", "Runtime.evaluate", false},
		{"Input.dispatch*", "Input.dispatchKeyEvent", true},
		{"Input.dispatch*", "Input.insertText", false},
		{"*", "", true},
		{"*", "Anything.at_all", true},
		{"*.enable", "Page.enable", true},
		{"*.enable", "Page.enabled", false},
		{"P*e.n*e", "Page.navigate", true},
		{"a*b*c", "abbbc", true},
		{"a*b*c", "acb", false},
		{"", "", true},
		{"", "x", false},
	} {
		if got := matchPattern(tc.p, tc.s); got != tc.want {
			t.Errorf("matchPattern(%q, %q) = %v, want %v", tc.p, tc.s, got, tc.want)
		}
	}
}

// FuzzMatchPattern: matchPattern agrees with a plain recursive matcher on
// short inputs, and stays fast on a many-star pattern against a long
// method name (both come from plugins).
func FuzzMatchPattern(f *testing.F) {
	f.Add("a*b*c", "abbbc")
	f.Add("*.*", "Page.navigate")
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(p) > 12 || len(s) > 24 {
			return
		}
		var ref func(p, s string) bool
		ref = func(p, s string) bool {
			if p == "" {
				return s == ""
			}
			if p[0] == '*' {
				return ref(p[1:], s) || s != "" && ref(p, s[1:])
			}
			return s != "" && p[0] == s[0] && ref(p[1:], s[1:])
		}
		if got, want := matchPattern(p, s), ref(p, s); got != want {
			t.Fatalf("matchPattern(%q, %q) = %v, want %v", p, s, got, want)
		}
	})
}

func TestMatchPatternIsNotExponential(t *testing.T) {
	p := strings.Repeat("a*", 40) + "b"
	s := strings.Repeat("a", 1<<14)
	done := make(chan bool, 1)
	go func() { done <- matchPattern(p, s) }()
	select {
	case got := <-done:
		if got {
			t.Fatal("matched a string without b")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("matchPattern took over 5 s on 40 stars")
	}
}
