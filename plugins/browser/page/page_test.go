package main

import (
	"strings"
	"testing"
)

func TestUnescapeUnicode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"plain"`, `"plain"`},
		{`"Zo\u00eb \u2713 \u4e2d"`, `"Zoë ✓ 中"`},
		{`"\ud83d\ude00"`, `"😀"`},              // a surrogate pair
		{`"\u0001\n\"q\""`, `"\u0001\n\"q\""`}, // control characters stay escaped
		{`"\\u00eb"`, `"\\u00eb"`},             // an escaped backslash, then text
		{`"\ud83d"`, `"\ud83d"`},               // a lone surrogate stays
		{"{\n  \"k\\u00e9\": [\n    1\n  ]\n}", "{\n  \"ké\": [\n    1\n  ]\n}"},
	} {
		if got := unescapeUnicode(tc.in); got != tc.want {
			t.Errorf("unescapeUnicode(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestBound(t *testing.T) {
	short := strings.Repeat("é", MaxText)
	if got := bound(short); got != short {
		t.Errorf("a text of MaxText characters was changed (%d characters)", len([]rune(got)))
	}
	long := strings.Repeat("é", MaxText+5)
	got := bound(long)
	body, note, ok := strings.Cut(got, "\n\n")
	if !ok || body != short || note != "[aiod: the answer was cut at 100000 of its 100005 characters]" {
		t.Errorf("bound: %d characters, note %q", len([]rune(body)), note)
	}
}

func TestPressKeySchema(t *testing.T) {
	if len(keyNames) != 39 || len(keys) != 39 {
		t.Fatalf("%d key names, %d keys; want the upstream's 39", len(keyNames), len(keys))
	}
	for _, n := range keyNames {
		if _, ok := keys[n]; !ok {
			t.Errorf("key %s has no definition", n)
		}
	}
	if !strings.Contains(pressKeySchema, `"enum":["Enter","Tab",`) || !strings.Contains(pressKeySchema, `such as Enter, Tab, Escape,`) {
		t.Errorf("schema: %s", pressKeySchema)
	}
}

func TestToolsTable(t *testing.T) {
	if len(tools) != 21 {
		t.Fatalf("%d tools, want 21", len(tools))
	}
	seen := map[string]bool{}
	for _, tl := range tools {
		if seen[tl.name] || !strings.HasPrefix(tl.name, "browser_") || tl.run == nil {
			t.Errorf("tool %q: duplicate, misnamed or without a handler", tl.name)
		}
		seen[tl.name] = true
	}
}
