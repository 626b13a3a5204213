package main

import "testing"

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pat, rel string
		hidden   bool
		want     bool
	}{
		{"*.py", "a.py", false, true},
		{"*.py", "d/a.py", false, false},
		{"**/*.py", "a.py", false, true},
		{"**/*.py", "d/e/a.py", false, true},
		{"**/*.py", "d/.venv/a.py", false, false},
		{"**/*.py", "d/.venv/a.py", true, true},
		{"*", ".env", false, false},
		{".*", ".env", false, true},
		{"*", ".env", true, true},
		{"src/**", "src/a/b", false, true},
		{"src/**", "src", false, true},
		{"src/*/b", "src/a/b", false, true},
		{"src/*/b", "src/a/c/b", false, false},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"[ab].txt", "b.txt", false, true},
		{"?.txt", "ab.txt", false, false},
	}
	for _, c := range cases {
		g, err := compileGlob(c.pat)
		if err != nil {
			t.Fatalf("%s: %v", c.pat, err)
		}
		if got := g.match(c.rel, c.hidden); got != c.want {
			t.Errorf("match(%q, %q, hidden=%v) = %v, want %v", c.pat, c.rel, c.hidden, got, c.want)
		}
	}
}

func TestGlobCompile(t *testing.T) {
	for _, bad := range []string{"", "/", "[", "a/[b"} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q): no error", bad)
		}
	}
	g, _ := compileGlob("src/lib/**/*.go")
	if p := g.literalPrefix(); len(p) != 2 || p[0] != "src" || p[1] != "lib" {
		t.Errorf("literalPrefix = %v", p)
	}
	if g.maxDepth() != 0 {
		t.Errorf("maxDepth with ** = %d", g.maxDepth())
	}
	g, _ = compileGlob("a/*/c")
	if g.maxDepth() != 3 || len(g.literalPrefix()) != 1 {
		t.Errorf("a/*/c: depth %d prefix %v", g.maxDepth(), g.literalPrefix())
	}
}

func TestFilters(t *testing.T) {
	if !excluded([]string{"node_modules"}, "web/node_modules/x/y.js") {
		t.Error("node_modules not excluded")
	}
	if excluded([]string{"*.min.js"}, "web/app.js") {
		t.Error("app.js excluded")
	}
	if !anyMatch([]string{"*.py", "*.ts"}, "a.ts", "d/a.ts") {
		t.Error("include *.ts")
	}
	if !anyMatch([]string{"src/**/*.go"}, "a.go", "src/x/a.go") {
		t.Error("include with a slash")
	}
	if !wantType([]string{"py", ".TXT"}, "notes.txt") || wantType([]string{".py"}, "a.go") {
		t.Error("file_types")
	}
}

func TestSplitLines(t *testing.T) {
	got := splitLines("a\r\nb\n\nc\n")
	want := []string{"a", "b", "", "c"}
	if len(got) != len(want) {
		t.Fatalf("%q", got)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%q", got)
		}
	}
	if splitLines("") != nil {
		t.Error("empty")
	}
}
