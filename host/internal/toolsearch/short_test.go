package toolsearch

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestFirstSentence(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Execute a shell command. Sessions are managed automatically.", "Execute a shell command."},
		{"One line\\nand a second. Line.", "One line\\nand a second."},
		{"first line\nSecond line.", "first line"},
		{"Only list files with these extensions, e.g. ['.py', '.txt'] (list)", "Only list files with these extensions, e.g. ['.py', '.txt'] (list)"},
		{"Version 1.2 is here. Then more.", "Version 1.2 is here."},
		{"Really? Yes.", "Really?"},
		{"  spaced.  ", "spaced."},
		{"", ""},
		{"Ends with a dot.", "Ends with a dot."},
		{"A sentence.  Élan follows.", "A sentence."},
	} {
		if got := firstSentence(tc.in); got != tc.want {
			t.Errorf("firstSentence(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// dropDescriptions removes every "description" string from a decoded schema.
func dropDescriptions(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, ok := e.(string); ok && k == "description" {
				delete(x, k)
				continue
			}
			x[k] = dropDescriptions(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropDescriptions(e)
		}
	}
	return v
}

// TestShortDef: the short form of every tool of the test catalogue keeps
// what a call needs (name, title, the input schema less its longer
// descriptions, the annotations' meaning, execution) and drops the rest.
func TestShortDef(t *testing.T) {
	defs := testTools(t, 500)
	var whole, short int
	for _, def := range defs {
		s := shortDef(def)
		whole, short = whole+len(def), short+len(s)
		if len(s) > len(def) {
			t.Fatalf("short form of %d bytes, the whole definition %d: %s", len(s), len(def), s)
		}
		var full, got map[string]any
		if err := json.Unmarshal(def, &full); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(s, &got); err != nil {
			t.Fatalf("short form of %s is not JSON: %v", def, err)
		}
		if got["name"] != full["name"] {
			t.Fatalf("name %v, want %v", got["name"], full["name"])
		}
		for _, k := range []string{"outputSchema", "icons", "_meta"} {
			if _, ok := got[k]; ok {
				t.Fatalf("%s: short form keeps %s", full["name"], k)
			}
		}
		if !reflect.DeepEqual(got["execution"], full["execution"]) {
			t.Fatalf("%s: execution %v, want %v", full["name"], got["execution"], full["execution"])
		}
		if !reflect.DeepEqual(dropDescriptions(got["inputSchema"]), dropDescriptions(full["inputSchema"])) {
			t.Fatalf("%s: the input schema changed beyond its descriptions:\n%s\n%s", full["name"], s, def)
		}
		title, _ := full["title"].(string)
		fa, _ := full["annotations"].(map[string]any)
		if title == "" && fa != nil {
			title, _ = fa["title"].(string)
		}
		if g, _ := got["title"].(string); g != title {
			t.Fatalf("%s: title %q, want %q", full["name"], g, title)
		}
		ga, _ := got["annotations"].(map[string]any)
		for k, dflt := range hintDefaults {
			want, ok := fa[k].(bool)
			if !ok {
				want = dflt
			}
			have, ok := ga[k].(bool)
			if !ok {
				have = dflt
			}
			if have != want {
				t.Fatalf("%s: %s means %v, want %v", full["name"], k, have, want)
			}
		}
		if d, _ := got["description"].(string); len(d) > lineMax+len("…") {
			t.Fatalf("%s: description of %d bytes", full["name"], len(d))
		}
	}
	t.Logf("%d tools: %d bytes whole, %d short", len(defs), whole, short)
	if short >= whole {
		t.Fatalf("short forms %d bytes, whole %d", short, whole)
	}
}

// TestShortDefOddInput: definitions that are not tool objects pass through.
func TestShortDefOddInput(t *testing.T) {
	for _, in := range []string{`null`, `[]`, `{"name":""}`, `{"name":"x","inputSchema":true}`, `{"name":"x","annotations":[1]}`, `"str"`} {
		got := shortDef(json.RawMessage(in))
		if !json.Valid(got) {
			t.Fatalf("shortDef(%s) = %s, not JSON", in, got)
		}
	}
	if got := string(shortDef(json.RawMessage(`{"name":"x","inputSchema":true,"outputSchema":{}}`))); got != `{"name":"x","inputSchema":true}` {
		t.Fatalf("boolean schema: %s", got)
	}
}

// FuzzShortDef: any bytes an upstream may publish as a tool give JSON back,
// never a panic.
func FuzzShortDef(f *testing.F) {
	for _, s := range []string{`{"name":"a","description":"One. Two.","inputSchema":{"type":"object","properties":{"p":{"description":"x. Y"}}},"annotations":{"title":"A","readOnlyHint":false}}`, `{}`, `{"name":"n","annotations":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		if out := shortDef(b); !json.Valid(out) {
			t.Fatalf("shortDef(%s) = %s", b, out)
		}
	})
}
