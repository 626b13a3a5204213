package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLaunchServesPageTools is the page tools' "bin/aiod start --browser launch
// serves the ten built-ins plus the page tools": the process launches
// Debian's chromium itself, lists the ten built-ins in their order, then
// the 21 page tools in the page plugin's order, and a local page
// navigated with browser_navigate gives its text back through
// browser_get_text. A plain start lists no page tool (the other e2e tests'
// tool lists, the seed aggregation transcript among them).
func TestLaunchServesPageTools(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "the launched browser and the page tools' answers: host-side CDP and the page script (host/sandboxtest TestPageToolsListed loads the plugin on every engine)")
	root := repoRoot()
	ten := manifestTools(t, filepath.Join(root, "plugins", "builtin", "dist"), orderOf(t, filepath.Join(root, "plugins", "builtin", "dist", "order"))...)
	page := manifestTools(t, filepath.Join(root, "plugins", "browser", "dist"), "browser_page_tools")
	if len(ten) != 10 || len(page) != 21 {
		t.Fatalf("%d built-in tools and %d page tools built, want 10 and 21 (make build)", len(ten), len(page))
	}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>p</title><p>Launched browser, page text 5081.</p>`)
	}))
	defer web.Close()

	a := start(t, nil, "--browser", "launch", "--browser-viewport", "800x600")
	names := toolsList(t, a.URL)
	if len(names) < 31 || !slices.Equal(names[:10], ten) || !slices.Equal(names[10:31], page) {
		t.Fatalf("--browser launch lists %v\nwant the ten %v, then the page tools %v", names, ten, page)
	}
	text, isErr := callTool(t, a.URL, "browser_navigate", fmt.Sprintf(`{"url":%q}`, web.URL+"/"))
	if isErr || !strings.Contains(text, "Navigated to "+web.URL) {
		t.Fatalf("browser_navigate: isError %v, %q", isErr, text)
	}
	text, isErr = callTool(t, a.URL, "browser_get_text", `{}`)
	if isErr || !strings.Contains(text, "Launched browser, page text 5081.") {
		t.Fatalf("browser_get_text: isError %v, %q", isErr, text)
	}
}

// orderOf reads a built-ins order file: one plugin directory a line.
func orderOf(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (make build)", err)
	}
	return strings.Fields(string(b))
}

// manifestTools lists the tools of the named plugin packages under dir,
// in their manifests' order.
func manifestTools(t *testing.T, dir string, plugins ...string) []string {
	t.Helper()
	var names []string
	for _, p := range plugins {
		b, err := os.ReadFile(filepath.Join(dir, p, "manifest.json"))
		if err != nil {
			t.Fatalf("%v (make build)", err)
		}
		var m struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, tl := range m.Tools {
			names = append(names, tl.Name)
		}
	}
	return names
}
