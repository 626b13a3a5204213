package machinetest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/aoi"
	"github.com/google/jsonschema-go/jsonschema"
)

// TestFixturesConform: the test tools' streams, run directly (no
// adapter), pass the same conformance check as aiod's own CLI's
// (aoi.Check, cmd/aiod TestMachineStreams), every event valid against the
// command's own schema; the misbehaving commands fail it, each for its
// reason.
func TestFixturesConform(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Go test tool (not in -short)")
	}
	_, docs := built(t)
	notes, _ := filepath.Abs(filepath.Join("testdata", "notes.py"))
	py := python(t)
	for _, c := range []struct {
		prog []string
		cmd  string
		args []string
		fail string // what the check says, "" when the stream conforms
	}{
		{[]string{docs, "docs"}, "search", []string{"--limit=2", "--output", "jsonl", "--", "agent"}, ""},
		{[]string{docs, "docs"}, "delete", []string{"--dry-run", "--output", "jsonl", "--", "doc_1"}, ""},
		{[]string{docs, "docs"}, "delete", []string{"--output", "jsonl", "--", "doc_1"}, ""}, // ok: false is conforming
		{[]string{docs, "docs"}, "fail", []string{"--scope=item", "--output", "jsonl"}, ""},
		{[]string{docs, "docs"}, "fail", []string{"--scope=authn", "--output", "jsonl"}, ""},
		{[]string{docs, "docs"}, "progress", []string{"--steps=3", "--output", "jsonl"}, ""},
		{[]string{py, notes}, "list", []string{"--limit=3", "--output", "jsonl"}, ""},
		{[]string{py, notes}, "slow-count", []string{"--to=2", "--output", "jsonl"}, ""},
		{[]string{docs, "docs"}, "crash", []string{"--output", "jsonl"}, "ended without a summary"},
		{[]string{docs, "docs"}, "prose", []string{"--output", "jsonl"}, "line 2: not a JSON object"},
		{[]string{py, notes}, "boom", []string{"--output", "jsonl"}, "ended without a summary"},
	} {
		name := filepath.Base(c.prog[len(c.prog)-1]) + " " + c.cmd
		sch, types := commandSchema(t, c.prog, c.cmd)
		cmd := exec.Command(c.prog[0], append(append(c.prog[1:], c.cmd), c.args...)...)
		cmd.Dir = t.TempDir()
		out, _ := cmd.Output() // the exit code does not matter: the summary does
		_, err := aoi.Check(out, c.cmd, types, func(ev aoi.Line) error { return sch.Validate(map[string]any(ev)) })
		switch {
		case c.fail == "" && err != nil:
			t.Errorf("%s: %v\n%s", name, err, out)
		case c.fail != "" && (err == nil || !strings.Contains(err.Error(), c.fail)):
			t.Errorf("%s: %v, want it to say %q", name, err, c.fail)
		}
	}
}

// commandSchema is a tool's published schema of cmd's events, resolved,
// and the event types capabilities lists for it.
func commandSchema(t *testing.T, prog []string, cmd string) (*jsonschema.Resolved, []string) {
	t.Helper()
	out, err := exec.Command(prog[0], append(prog[1:], "schema", "--output", "json", "--command", cmd)...).Output()
	if err != nil {
		t.Fatalf("%v schema %s: %v", prog, cmd, err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(prog[0], append(prog[1:], "capabilities", "--output", "json")...).Output()
	if err != nil {
		t.Fatal(err)
	}
	var caps struct {
		Commands []struct {
			Name       string   `json:"name"`
			EventTypes []string `json:"event_types"`
		} `json:"commands"`
	}
	json.Unmarshal(out, &caps)
	for _, c := range caps.Commands {
		if c.Name == cmd {
			return rs, c.EventTypes
		}
	}
	t.Fatalf("%v: capabilities does not list %s", prog, cmd)
	return nil, nil
}
