package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb strings.Builder
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestPluginCommands runs the plugin subcommands on a C project made by
// `aiod plugin new` (C builds in about a second): new, build --into,
// inspect, verify, test, and their usage errors.
func TestPluginCommands(t *testing.T) {
	dir := t.TempDir()
	proj, plugins := filepath.Join(dir, "hello"), filepath.Join(dir, "plugins")
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"plugin"}, 2, ""},
		{[]string{"plugin", "frob"}, 2, ""},
		{[]string{"plugin", "new"}, 2, ""},
		{[]string{"plugin", "new", "hello", "--lang", "cobol"}, 2, ""},
		{[]string{"plugin", "new", "hello", "--lang", "c", "--dir", proj}, 0, "created " + proj + " (c)"},
		{[]string{"plugin", "new", "hello", "--lang", "c", "--dir", proj}, 1, ""},
		{[]string{"plugin", "build", proj, "--into", plugins}, 0, "built hello 0.1.0 (c,"},
		{[]string{"plugin", "inspect", filepath.Join(plugins, "hello")}, 0, "(matches)"},
		{[]string{"plugin", "inspect", filepath.Join(proj, "build", "plugin.wasm")}, 0, "form      reactor"},
		{[]string{"plugin", "inspect", filepath.Join(dir, "nothing")}, 1, ""},
		{[]string{"plugin", "verify", filepath.Join(plugins, "hello")}, 0, "plugin hello: loads"},
		{[]string{"plugin", "test", proj, "--engine", "wazero"}, 0, `ok   wazero   hello {"who":"Ada"} -> {"content":[{"type":"text","text":"Hello, Ada!"}],"isError":false}`},
	} {
		code, out, errOut := runCmd(t, c.args...)
		if code != c.code || !strings.Contains(out, c.out) {
			t.Errorf("aiod %s: exit %d, want %d; stdout %q wants %q; stderr %s", strings.Join(c.args, " "), code, c.code, out, c.out, errOut)
		}
	}
	// --json and a failed expectation.
	code, out, _ := runCmd(t, "plugin", "inspect", "--json", filepath.Join(plugins, "hello"))
	var r struct {
		Form     string `json:"form"`
		DigestOK bool   `json:"digest_ok"`
		Manifest struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"manifest"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Form != "reactor" || !r.DigestOK || len(r.Manifest.Tools) != 1 {
		t.Errorf("inspect --json: exit %d, %s", code, out)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"tool":"hello","arguments":{"who":"Bob"},"expect":"Hello, Ada!"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCmd(t, "plugin", "test", filepath.Join(plugins, "hello"), "--args", bad, "--engine", "wazero"); code != 1 || !strings.Contains(out, `text "Hello, Bob!", expected "Hello, Ada!"`) {
		t.Errorf("test with a wrong expectation: exit %d, %s", code, out)
	}
	// in machine mode: an answer event per call, ok false and exit 1 when
	// one differs (TestMachineStreams checks the other commands)
	ds := discoverAiod(t)
	evs := ds.stream(t, "plugin test", 0, "plugin", "test", "--output", "jsonl", "--engine=wazero", "--", proj)
	if a := ofType(evs, "answer"); len(a) != 2 || a[0]["tool"] != "hello" || a[0]["text"] != "Hello, Ada!" || a[1]["isError"] != true {
		t.Errorf("plugin test --output jsonl: %v", evs)
	}
	evs = ds.stream(t, "plugin test", 1, "plugin", "test", filepath.Join(plugins, "hello"), "--args", bad, "--engine", "wazero", "--output", "jsonl")
	fatalError(t, evs, "validation", "ANSWERS_DIFFER")
	if a := ofType(evs, "answer"); len(a) != 1 || !strings.Contains(a[0]["failed"].(string), `expected "Hello, Ada!"`) {
		t.Errorf("plugin test with a wrong expectation: %v", evs)
	}
	// --cache-dir: the hosts compile through the given cache.
	cache := filepath.Join(dir, "cache")
	if code, out, errOut := runCmd(t, "plugin", "test", proj, "--engine", "wazero", "--cache-dir", cache); code != 0 || !strings.Contains(out, "ok   wazero   hello") {
		t.Errorf("test --cache-dir: exit %d, %s %s", code, out, errOut)
	}
	if entries, err := os.ReadDir(cache); err != nil || len(entries) == 0 {
		t.Errorf("test --cache-dir left the cache empty: %v, %v", entries, err)
	}
}
