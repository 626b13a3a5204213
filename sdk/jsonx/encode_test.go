package jsonx

import (
	"bytes"
	"encoding/json"
	"testing"
)

// std is encoding/json without HTML escaping.
func std(t *testing.T, v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	s := "x"
	values := []any{
		nil, "", "plain", "quote\" back\\ nl\n cr\r tab\t bs\b ff\f nul\x00 esc\x1b del\x7f",
		"héllo wörld ✓ 😀 <a&b>", true, false, 0, -42, int64(1 << 40), &s, (*string)(nil),
		[]string{"a", "b"}, []string{}, []int{0, 2}, []int{},
		[]map[string]any{{"b": 1, "a": "x"}}, []any{1, "two", nil, []string{"3"}},
		map[string]any{"z": 1, "a": map[string]any{"y": nil, "b": []int{1}}, "m": "é"},
		map[string]any{}, struct {
			A int `json:"a"`
		}{7},
	}
	for _, v := range values {
		if got, want := Marshal(v), std(t, v); !bytes.Equal(got, want) {
			t.Errorf("%#v:\n got %s\nwant %s", v, got, want)
		}
	}
}

func TestInvalidUTF8(t *testing.T) {
	if got := string(Marshal("a\xffb\xc3")); got != "\"a\ufffdb\ufffd\"" {
		t.Errorf("%q", got)
	}
	if got := string(Marshal("\u2028")); got != "\"\u2028\"" {
		t.Errorf("U+2028: %q", got)
	}
}
