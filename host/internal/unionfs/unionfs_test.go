package unionfs_test

import (
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/aiodhq/aiod/host/internal/unionfs"
)

func TestUnion(t *testing.T) {
	builtins := fstest.MapFS{
		"order":               {Data: []byte("b_one\nb_two\n")},
		"b_one/manifest.json": {Data: []byte(`{"name":"b_one"}`)},
		"b_two/manifest.json": {Data: []byte(`{"name":"b_two"}`)},
		"README.md":           {Data: []byte("built-ins")},
	}
	pkg := fstest.MapFS{
		"browser_page_tools/manifest.json": {Data: []byte(`{"name":"browser_page_tools"}`)},
		"browser_page_tools/plugin.wasm":   {Data: []byte("\x00asm")},
		"README.md":                        {Data: []byte("page tools")},
		"b_one/manifest.json":              {Data: []byte(`{"name":"shadowed"}`)},
	}
	u := unionfs.New(builtins, pkg)
	ents, err := fs.ReadDir(u, ".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"README.md", "b_one", "b_two", "browser_page_tools", "order"}; !slices.Equal(names, want) {
		t.Errorf("root %v, want %v", names, want)
	}
	for path, want := range map[string]string{
		"order": "b_one\nb_two\n", "README.md": "built-ins", "b_one/manifest.json": `{"name":"b_one"}`,
		"browser_page_tools/plugin.wasm": "\x00asm",
	} {
		b, err := fs.ReadFile(u, path)
		if err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", path, b, err, want)
		}
	}
	if _, err := fs.Stat(u, "browser_page_tools/manifest.json"); err != nil {
		t.Errorf("stat: %v", err)
	}
	if _, err := u.Open("../x"); err == nil {
		t.Error("an invalid path opened")
	}
}
