package wasmbin

import (
	"strings"
	"testing"
)

func TestImports(t *testing.T) {
	// two imports: a function "a"."f" of type 0 and a memory "a"."m" of
	// at least one page
	body := []byte{2, 1, 'a', 1, 'f', KindFunc, 0, 1, 'a', 1, 'm', KindMemory, 0, 1}
	for _, tc := range []struct {
		name  string
		b     []byte
		kinds []byte
		err   string
	}{
		{"two", body, []byte{KindFunc, KindMemory}, ""},
		{"none", []byte{0}, nil, ""},
		{"truncated", body[:len(body)-1], nil, "unexpected end"},
		{"a count past the bytes", []byte{0x7f, 1, 'a'}, nil, "vector of 127 entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(tc.b)
			imps, err := r.Imports()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(imps) != len(tc.kinds) {
				t.Fatalf("%d imports, err %v; want %d", len(imps), err, len(tc.kinds))
			}
			for i, imp := range imps {
				if imp.Kind != tc.kinds[i] || string(imp.Module) != "a" {
					t.Errorf("import %d: %+v", i, imp)
				}
			}
		})
	}
}
