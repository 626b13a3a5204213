package caps

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestSchemaRules checks the string rules written into schema.json against
// the ones Validate applies: the regular expressions must be the very same,
// and the rules Validate writes in code must agree with their schema
// patterns on a table of strings.
func TestSchemaRules(t *testing.T) {
	b, err := os.ReadFile("../../spec/manifest/v1/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	get := func(path ...string) string {
		var v any = doc
		for _, p := range path {
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("schema has no %s", strings.Join(path, "."))
			}
			v = m[p]
		}
		s, ok := v.(string)
		if !ok {
			t.Fatalf("schema %s is not a string", strings.Join(path, "."))
		}
		return s
	}
	for _, tc := range []struct {
		path []string
		re   *regexp.Regexp
	}{
		{[]string{"properties", "name", "pattern"}, nameRE},
		{[]string{"$defs", "Tool", "properties", "name", "pattern"}, toolNameRE},
		{[]string{"$defs", "Prompt", "properties", "name", "pattern"}, toolNameRE},
	} {
		if got := get(tc.path...); got != tc.re.String() {
			t.Errorf("schema %s = %q, manifest.go has %q", strings.Join(tc.path, "."), got, tc.re)
		}
	}

	strs := []string{
		"", ".", "..", "...", "/", "//", "a", "A", "a/b", `a\b`, "plugin.wasm", "-", "$", "~",
		"$SANDBOX", "$SANDBOX/", "$SANDBOX/x", "$SANDBOXx", "$SANDBOX\x00", "$HOME", "$HOME/.cache",
		"$HOMEx", "$TMP", "$TMP/a/../b", "$WORKSPACE", "$WORKSPACE/src", "$USER", "$sandbox",
		"/srv/data", "/a\x00b", "rel/dir", " /srv", "/srv\n", "x y", "x\ny", "x\x00", "ls", "*",
		"/usr/bin/git", "notes://index", "file:///a b", "{x}", "x://{a}/{b}", "}{", "é",
		strings.Repeat("a", 64), strings.Repeat("f", 64), strings.Repeat("F", 64), strings.Repeat("0", 63),
	}
	sha := regexp.MustCompile(get("properties", "sha256", "pattern"))
	module := regexp.MustCompile(get("properties", "module", "pattern"))
	scope := regexp.MustCompile(get("$defs", "scopePath", "pattern"))
	uri := regexp.MustCompile(get("$defs", "Resource", "properties", "uri", "pattern"))
	tmpl := regexp.MustCompile(get("$defs", "ResourceTemplate", "properties", "uriTemplate", "pattern"))
	cmd := regexp.MustCompile(get("$defs", "ProcessScope", "properties", "commands", "items", "pattern"))
	for _, s := range strs {
		for _, r := range []struct {
			name         string
			schema, host bool
		}{
			{"sha256", sha.MatchString(s), s == "" || sha256RE.MatchString(s)},
			// "." and ".." are excluded by "not": {"enum": [".", ".."]}.
			{"module", module.MatchString(s) && s != "." && s != "..",
				!strings.ContainsAny(s, `/\`) && s != "." && s != ".."},
			{"scope path", scope.MatchString(s), checkPath(s) == nil},
			{"resource uri", uri.MatchString(s), s != "" && !strings.ContainsAny(s, " \x00\n")},
			{"uri template", tmpl.MatchString(s), s != "" && strings.Contains(s, "{")},
			{"command", cmd.MatchString(s), s != "" && !strings.ContainsAny(s, "\x00\n")},
		} {
			if r.schema != r.host {
				t.Errorf("%s %q: schema says %v, host says %v", r.name, s, r.schema, r.host)
			}
		}
	}
}
