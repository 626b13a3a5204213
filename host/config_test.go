package host

import (
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/aiodhq/aiod/host/browser"
)

func TestPageToolsServed(t *testing.T) {
	pkg := fstest.MapFS{"browser_page_tools/manifest.json": {Data: []byte("{}")}}
	for _, tc := range []struct {
		name string
		mode browser.Mode
		on   bool
		fsys fs.FS
		want bool
	}{
		{"plain start (attach)", browser.Attach, false, pkg, false},
		{"attach with --page-tools", browser.Attach, true, pkg, true},
		{"the default mode with --page-tools", "", true, pkg, true},
		{"launch", browser.Launch, false, pkg, true},
		{"off, even when asked", browser.Off, true, pkg, false},
		{"a binary without the package", browser.Launch, true, nil, false},
	} {
		c := PageToolsConfig{PageTools: tc.on, PageToolsFS: tc.fsys}
		if got := c.served(tc.mode); got != tc.want {
			t.Errorf("%s: served %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestWithPageToolsUnion(t *testing.T) {
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
	c := PageToolsConfig{PageToolsFS: pkg}
	u := c.builtins(builtins, browser.Launch)
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
	// not served: the built-ins alone
	if got := c.builtins(builtins, browser.Attach); got == nil || func() bool { _, err := fs.Stat(got, "browser_page_tools"); return err == nil }() {
		t.Error("attach without --page-tools: the page tools are there")
	}
}
