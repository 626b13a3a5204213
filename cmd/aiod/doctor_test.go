package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/doctor"
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

// TestDoctorLockdown: `aiod doctor --lockdown` without --audit-log reports
// the lockdown check missing the audit log in the words `aiod start
// --lockdown` refuses with; with a data dir and an audit log it misses
// neither. The refusal is the real one, from the same configuration.
func TestDoctorLockdown(t *testing.T) {
	data := t.TempDir()
	type check struct {
		Name    string   `json:"name"`
		OK      bool     `json:"ok"`
		Detail  string   `json:"detail"`
		Missing []string `json:"missing"`
	}
	lockdownCheck := func(args ...string) check {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(append([]string{"doctor", "--json", "--cache-dir", t.TempDir()}, args...), &out, &errb); code != 0 {
			t.Fatalf("doctor %v: exit %d: %s", args, code, errb.String())
		}
		var r struct{ Checks []check }
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		for _, c := range r.Checks {
			if c.Name == "lockdown" {
				return c
			}
		}
		t.Fatalf("doctor %v: no lockdown check: %s", args, out.String())
		return check{}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"start", "--lockdown", "--data-dir", data, "--api-key", "doctor-test-key", "--port", "0", "--cache-dir", "-"}, &out, &errb); code == 0 {
		t.Fatalf("aiod start --lockdown without --audit-log started:\n%s", errb.String())
	}
	refusal := ""
	for _, l := range strings.Split(errb.String(), "\n") {
		if m, ok := strings.CutPrefix(l, "  - "); ok && strings.Contains(m, "--audit-log") {
			refusal = m
		}
	}
	if refusal == "" {
		t.Fatalf("the refusal names no audit log:\n%s", errb.String())
	}
	c := lockdownCheck("--lockdown", "--data-dir", data)
	if c.OK || !slices.Contains(c.Missing, refusal) {
		t.Errorf("doctor --lockdown without --audit-log: %+v; want it to miss %q", c, refusal)
	}
	c = lockdownCheck("--lockdown")
	if !slices.Contains(c.Missing, doctor.LockdownNoDataDir) {
		t.Errorf("doctor --lockdown without --data-dir: %+v", c)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	c = lockdownCheck("--lockdown", "--data-dir", data, "--audit-log", audit)
	for _, m := range c.Missing {
		if strings.Contains(m, "audit") || strings.Contains(m, "data-dir") {
			t.Errorf("doctor --lockdown with --data-dir and --audit-log misses %q", m)
		}
	}
	if c = lockdownCheck("--lockdown", "--data-dir", data, "--audit-log", filepath.Join(data, "no", "such", "audit.jsonl")); !slices.ContainsFunc(c.Missing, func(m string) bool { return strings.HasPrefix(m, "audit log: ") }) {
		t.Errorf("an audit log in a missing directory: %+v", c)
	}
	// the environment, as aiod start reads it
	t.Setenv("AIO_LOCKDOWN", "true")
	t.Setenv("AIO_DATA_DIR", data)
	if c = lockdownCheck(); !slices.Contains(c.Missing, refusal) {
		t.Errorf("AIO_LOCKDOWN=true without AIO_AUDIT_LOG: %+v", c)
	}
	t.Setenv("AIO_AUDIT_LOG", audit)
	if c = lockdownCheck(); slices.Contains(c.Missing, refusal) {
		t.Errorf("AIO_AUDIT_LOG set: %+v", c)
	}
	out.Reset()
	t.Setenv("AIO_AUDIT_LOG", "")
	if code := run([]string{"doctor"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "\n  --  lockdown       aiod start --lockdown would refuse to start\n") ||
		!strings.Contains(out.String(), "                     - "+refusal+"\n") {
		t.Errorf("text: exit %d\n%s", code, out.String())
	}
	t.Setenv("AIO_LOCKDOWN", "maybe")
	if code := run([]string{"doctor"}, &out, &errb); code != 2 {
		t.Errorf("AIO_LOCKDOWN=maybe: exit %d", code)
	}
}
