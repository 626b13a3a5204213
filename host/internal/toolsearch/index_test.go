package toolsearch

import (
	"slices"
	"testing"
)

func TestTerms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"github_create_pull_request", []string{"github", "creat", "pull", "request"}},
		{"pullNumber", []string{"pull", "number"}},
		{"browser-get-info", []string{"browser", "get", "info"}},
		{"Creating files and directories", []string{"creat", "fil", "directory"}},
		{"the entries of a list", []string{"entry", "list"}},
		{"HTTPServer running", []string{"httpserver", "run"}},
	} {
		if got := terms(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("terms(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestIndexOddTools(t *testing.T) {
	ix, err := buildIndex([]byte(`[{"name":"a_tool","description":"alpha","inputSchema":{"type":"object","properties":{"x":true}}},` +
		`{"description":"no name"},7,{"name":"a_tool","description":"a duplicate"},{"name":"b","title":"Bravo"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.tools) != 2 || ix.tools[0].name != "a_tool" || ix.tools[1].title != "Bravo" {
		t.Fatalf("indexed %+v", ix.tools)
	}
	if h := ix.search("alpha", 5, nil); len(h) != 1 || h[0].doc != 0 {
		t.Fatalf("alpha: %+v", h)
	}
	if _, err := buildIndex([]byte(`{}`)); err == nil {
		t.Fatal("an object indexed as a list")
	}
}

func TestFirstLine(t *testing.T) {
	long := ""
	for range 60 {
		long += "word "
	}
	for _, tc := range []struct{ in, want string }{
		{"one line", "one line"},
		{"  first\nsecond", "first"},
		{long, long[:199] + "…"},
	} {
		if got := firstLine(tc.in); got != tc.want {
			t.Errorf("firstLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
