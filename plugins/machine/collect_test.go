package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestCollector: the stream checked line by line, whatever the pieces it
// arrives in.
func TestCollector(t *testing.T) {
	const meta = `{"type":"aoi:meta","tool":"t","command":"search"}`
	tests := []struct {
		name      string
		stream    string
		types     []string
		violation string
		events    int
		summary   bool
		ok        bool
		fatal     bool
	}{
		{"conforming", meta + "\n{\"type\":\"hit\",\"n\":1}\n{\"type\":\"aoi:summary\",\"ok\":true}\n", nil, "", 1, true, true, false},
		{"bare names, CRLF and blank lines", `{"type":"meta","command":"search"}` + "\r\n\n{\"type\":\"hit\"}\r\n{\"type\":\"summary\",\"ok\":true}", nil, "", 1, true, true, false},
		{"no final newline", meta + "\n{\"type\":\"aoi:summary\",\"ok\":false}", nil, "", 0, true, false, false},
		{"prose", meta + "\nFound 3 results\n", nil, `line 2 is not a JSON object (machine mode allows nothing else on stdout): "Found 3 results"`, 0, false, false, false},
		{"array", meta + "\n[1]\n", nil, "line 2 is not a JSON object", 0, false, false, false},
		{"no type", meta + "\n{\"n\":1}\n", nil, "line 2 has no \"type\"", 0, false, false, false},
		{"no meta first", "{\"type\":\"hit\"}\n", nil, "the stream must start with the meta event", 0, false, false, false},
		{"another command", `{"type":"aoi:meta","command":"delete"}` + "\n", nil, `the meta event names command "delete", not "search"`, 0, false, false, false},
		{"after the summary", meta + "\n{\"type\":\"aoi:summary\",\"ok\":true}\n{\"type\":\"hit\"}\n", nil, "line 3 comes after the summary", 0, true, true, false},
		{"type not allowed", meta + "\n{\"type\":\"other\"}\n", []string{"meta", "hit", "summary"}, "line 2 is a other event, which the command's schema does not allow", 0, false, false, false},
		{"progress always allowed", meta + "\n{\"type\":\"aoi:progress\",\"progress\":1}\n{\"type\":\"aoi:heartbeat\"}\n{\"type\":\"aoi:summary\",\"ok\":true}\n", []string{"meta", "summary"}, "", 0, true, true, false},
		{"second meta", meta + "\n" + meta + "\n", nil, "line 2 is a second meta event", 0, false, false, false},
		{"summary ok not a boolean", meta + "\n{\"type\":\"aoi:summary\",\"ok\":\"yes\"}\n", nil, "the summary does not read", 0, false, false, false},
		{"cursor not a string", meta + "\n{\"type\":\"aoi:summary\",\"ok\":true,\"next_cursor\":3}\n", nil, "next_cursor is not a string", 0, false, false, false},
		{"bad UTF-8", meta + "\n{\"type\":\"hit\",\"t\":\"\xff\"}\n", nil, "line 2 is not UTF-8", 0, false, false, false},
		{"error of process scope", meta + "\n{\"type\":\"aoi:error\",\"scope\":\"process\",\"code\":\"X\",\"retryable\":true}\n{\"type\":\"aoi:summary\",\"ok\":false}\n", nil, "", 1, true, false, true},
		{"error of item scope", meta + "\n{\"type\":\"error\",\"scope\":\"item\"}\n{\"type\":\"summary\",\"ok\":true}\n", nil, "", 1, true, true, false},
		{"type in another case", meta + "\n{\"TYPE\":\"hit\"}\n", nil, "line 2 has no \"type\"", 0, false, false, false},
		{"ok in another case", meta + "\n{\"type\":\"aoi:summary\",\"OK\":true}\n", nil, "", 0, true, false, false},
		{"trailing data", meta + "\n{\"type\":\"hit\"} x\n", nil, "line 2 is not a JSON object", 0, false, false, false},
		{"type with escapes", meta + "\n{\"type\":\"h\\u0069t\"}\n{\"type\":\"aoi:summary\",\"ok\":true}\n", []string{"meta", "hit", "summary"}, "", 1, true, true, false},
		{"type not a string", meta + "\n{\"type\":7}\n", nil, "line 2 is not a JSON object", 0, false, false, false},
		{"the type repeated", meta + "\n{\"type\":\"hit\",\"type\":\"other\"}\n", []string{"meta", "hit", "summary"}, "line 2 is a other event", 0, false, false, false},
		{"retryable not a boolean", meta + "\n{\"type\":\"aoi:error\",\"retryable\":\"no\"}\n", nil, "line 2: the error event does not read", 0, false, false, false},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 7, 1 << 20} {
			c := &collector{command: "search", types: tt.types}
			s := tt.stream
			for len(s) > 0 {
				n := min(size, len(s))
				if !c.write([]byte(s[:n])) {
					break
				}
				s = s[n:]
			}
			c.end()
			if tt.violation == "" && c.violation != "" || !strings.Contains(c.violation, tt.violation) {
				t.Errorf("%s (pieces of %d): violation %q, want %q", tt.name, size, c.violation, tt.violation)
				continue
			}
			if tt.violation != "" {
				continue
			}
			if c.n != tt.events || (c.summary != nil) != tt.summary || c.ok != tt.ok || (c.fatal != nil) != tt.fatal {
				t.Errorf("%s (pieces of %d): %d events, summary %s, ok %v, fatal %s", tt.name, size, c.n, c.summary, c.ok, c.fatal)
			}
		}
	}
}

// TestProgressForward: aoi:progress in its spellings, as MCP progress.
func TestProgressForward(t *testing.T) {
	type p struct {
		prog, total float64
		msg         string
	}
	var got []p
	c := &collector{command: "x", progress: func(prog, total float64, msg string) { got = append(got, p{prog, total, msg}) }}
	c.write([]byte(`{"type":"aoi:meta"}` + "\n" +
		`{"type":"aoi:progress","progress":2,"total":5,"message":"a"}` + "\n" +
		`{"type":"progress","current":3,"total":5}` + "\n" +
		`{"type":"aoi:progress","percent":80}` + "\n" +
		`{"type":"aoi:progress","message":"no number"}` + "\n"))
	want := []p{{2, 5, "a"}, {3, 5, ""}, {80, 100, ""}, {4, 0, "no number"}}
	if !slices.Equal(got, want) {
		t.Errorf("progress %v, want %v", got, want)
	}
}

// TestCommandLine: the arguments as the command line: flags as
// --name=value, booleans alone, arrays repeated, the adapter's flags,
// --output jsonl, then -- and the operands.
func TestCommandLine(t *testing.T) {
	cli := CLI{Command: []string{"/bin/tool", "fixed"}}
	b := &Binding{Command: "docs search", Path: []string{"docs", "search"},
		Flags: []Flag{{Prop: "limit", Name: "limit", Type: "integer"}, {Prop: "tag", Name: "tag", Type: "array", Items: "string"},
			{Prop: "exact_case", Name: "exact-case", Type: "boolean"}, {Prop: "ratio", Name: "ratio", Type: "number"}},
		Operands: []Operand{{Prop: "query", Type: "string"}, {Prop: "rest", Type: "array", Items: "integer", Variadic: true}},
		Cursor:   true, DryRun: true, IdempotencyKey: true}
	line, err := commandLine(cli, b, json.RawMessage(`{"limit":5,"tag":["a","b c"],"exact_case":true,"ratio":0.5,"query":"-rf /","rest":[1,2],"cursor":"c1","dry_run":true,"idempotency_key":"k"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/tool", "fixed", "docs", "search", "--limit=5", "--tag=a", "--tag=b c", "--exact-case", "--ratio=0.5",
		"--cursor=c1", "--idempotency-key=k", "--dry-run", "--confirm", "--output", "jsonl", "--", "-rf /", "1", "2"}
	if got := line.argv(true); !slices.Equal(got, want) || !line.dryRun {
		t.Errorf("argv\n %q\nwant\n %q", got, want)
	}
	if got := (cmdLine{head: []string{"/t", "x"}}).argv(false); !slices.Equal(got, []string{"/t", "x", "--output", "jsonl"}) {
		t.Errorf("argv without operands %q", got)
	}
	for args, msg := range map[string]string{
		`{"limit":"5"}`:        "limit must be an integer",
		`{"limit":1.5}`:        "limit must be an integer",
		`{"tag":"a"}`:          "tag must be an array",
		`{"exact_case":1}`:     "exact_case must be a boolean",
		`{"query":3}`:          "query must be a string",
		`{"rest":["x"]}`:       "rest[] must be an integer",
		`{"nope":1}`:           `unknown argument "nope"`,
		`[1]`:                  "the arguments must be a JSON object",
		`{"query":"a\u0000b"}`: "query must not contain NUL",
		`{"dry_run":"yes"}`:    "dry_run must be a boolean",
		`{"ratio":"1"}`:        "ratio must be a number",
	} {
		if _, err := commandLine(cli, b, json.RawMessage(args)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", args, err, msg)
		}
	}
	bl := &Binding{Limit: true}
	if _, err := commandLine(cli, bl, json.RawMessage(`{"limit":0}`)); err == nil || !strings.Contains(err.Error(), "at least 1") {
		t.Errorf("limit 0: %v", err)
	}
	if line, _ := commandLine(cli, bl, json.RawMessage(`{"limit":2}`)); !slices.Contains(line.head, "--limit=2") {
		t.Errorf("limit: %q", line.head)
	}
}

// TestSchemas: the input schema from flags and operands (an array or an
// object of them, type aliases), what the command supports, and the
// refusals; the outputSchema's re-based references.
func TestSchemas(t *testing.T) {
	b := &Binding{Cursor: true, DryRun: true}
	in, err := inputSchema(b, Command{Bounded: true},
		json.RawMessage(`{"max-depth":{"type":"int","required":true},"verbose":{"type":"bool"},"out":{"type":"str","repeatable":true}}`),
		json.RawMessage(`[{"name":"path","type":"path"},{"name":"more","variadic":true}]`))
	if err != nil {
		t.Fatal(err)
	}
	props := in["properties"].(map[string]any)
	types := map[string]string{}
	for k, v := range props {
		types[k] = v.(map[string]any)["type"].(string)
	}
	want := map[string]string{"max_depth": "integer", "verbose": "boolean", "out": "array", "path": "string", "more": "array", "limit": "integer", "cursor": "string", "dry_run": "boolean"}
	if len(types) != len(want) {
		t.Errorf("properties %v", types)
	}
	for k, v := range want {
		if types[k] != v {
			t.Errorf("%s: %s, want %s", k, types[k], v)
		}
	}
	if !slices.Equal(in["required"].([]string), []string{"max_depth"}) || !b.Limit {
		t.Errorf("required %v, limit %v", in["required"], b.Limit)
	}
	for flags, msg := range map[string]string{
		`[{"name":"x","type":"date"}]`:         `type "date"`,
		`[{"name":"-x"}]`:                      "is not a flag name",
		`[{"name":"a-b"},{"name":"a_b"}]`:      "named twice",
		`[{"name":"cursor"},{"name":"limit"}]`: "",
		`{"x":1}`:                              "flags:",
	} {
		_, err := inputSchema(&Binding{}, Command{}, json.RawMessage(flags), nil)
		if msg == "" && err != nil || msg != "" && (err == nil || !strings.Contains(err.Error(), msg)) {
			t.Errorf("flags %s: %v, want %q", flags, err, msg)
		}
	}
	if _, err := inputSchema(&Binding{}, Command{}, nil, json.RawMessage(`[{"name":"a","variadic":true},{"name":"b"}]`)); err == nil || !strings.Contains(err.Error(), "is not the last") {
		t.Errorf("variadic first: %v", err)
	}
	if _, err := inputSchema(&Binding{}, Command{}, nil, json.RawMessage(`[{"name":"a","type":"boolean"}]`)); err == nil {
		t.Errorf("boolean operand accepted")
	}
	out, err := outputSchema("t", "c", []byte(`{"$schema":"x","$id":"y","properties":{"a":{"$ref":"#/$defs/a"},"b":{"$ref":"#"},"c":{"$ref":"other.json#/x"}},"$defs":{"a":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ev := out["$defs"].(map[string]any)["event"].(map[string]any)
	p := ev["properties"].(map[string]any)
	if ev["$schema"] != nil || ev["$id"] != nil || p["a"].(map[string]any)["$ref"] != "#/$defs/event/$defs/a" ||
		p["b"].(map[string]any)["$ref"] != "#/$defs/event" || p["c"].(map[string]any)["$ref"] != "other.json#/x" {
		t.Errorf("event schema %v", ev)
	}
}
