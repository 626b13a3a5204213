package guest

import (
	"errors"
	"testing"
)

func TestCodeIs(t *testing.T) {
	denied, invalid := errors.New("denied"), errors.New("invalid")
	other := errors.New("denied") // same text, not a sentinel of the family
	for _, tc := range []struct {
		code   string
		target error
		want   bool
	}{
		{"denied", denied, true},
		{"invalid", invalid, true},
		{"denied", invalid, false},
		{"denied", other, false},
		{"timeout", denied, false},
		{"denied", nil, false},
	} {
		if got := CodeIs(tc.code, tc.target, denied, invalid); got != tc.want {
			t.Errorf("CodeIs(%q, %v) = %v, want %v", tc.code, tc.target, got, tc.want)
		}
	}
}
