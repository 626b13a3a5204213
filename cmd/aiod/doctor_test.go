package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestDoctor: `aiod doctor --json` reports every check and every plane in
// aiod's per-domain shape; the text form lists the same planes.
func TestDoctor(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"doctor", "--json", "--cache-dir", t.TempDir()}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r struct {
		Version string `json:"version"`
		Checks  []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
		Capabilities map[string]struct {
			Status   string   `json:"status"`
			Missing  []string `json:"missing"`
			Warnings []string `json:"warnings"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	var names []string
	for _, c := range r.Checks {
		names = append(names, c.Name)
		if c.Name == "compile_cache" && !c.OK {
			t.Errorf("a writable cache dir is not ok")
		}
	}
	if got := strings.Join(names, ","); got != "bash,python3,node,chromium,bubblewrap,cgroups,compile_cache,cdp" {
		t.Errorf("checks %s", got)
	}
	for _, d := range []string{"files", "exec", "code_interpreter", "browser", "computer"} {
		c, ok := r.Capabilities[d]
		if !ok || (c.Status != "ready" && c.Status != "degraded" && c.Status != "absent") || c.Missing == nil || c.Warnings == nil {
			t.Errorf("%s: %+v", d, c)
		}
	}
	out.Reset()
	if code := run([]string{"doctor"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "\nplanes:\n  files") || !strings.Contains(out.String(), "  computer") {
		t.Fatalf("text: exit %d\n%s", code, out.String())
	}
	if code := run([]string{"doctor", "extra"}, &out, &errb); code != 2 {
		t.Fatalf("extra argument: exit %d", code)
	}
}
