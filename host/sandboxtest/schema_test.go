package sandboxtest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// Every tool result of this suite goes through checkResult (server.call):
// a result's structuredContent must conform to the outputSchema its tool
// declares, success and error shapes alike; a tool that answers
// structuredContent must declare one; and a tool that declares one must
// answer structuredContent unless the result is an error (MCP lets an
// isError result be plain text).

// declared is what tools/list says of one tool.
type declared struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  *struct {
		ReadOnlyHint    *bool `json:"readOnlyHint"`
		DestructiveHint *bool `json:"destructiveHint"`
		IdempotentHint  *bool `json:"idempotentHint"`
		OpenWorldHint   *bool `json:"openWorldHint"`
	} `json:"annotations"`
	out *jsonschema.Resolved
}

// toolDecls are the tools/list declarations of each server, read once.
var (
	toolDeclsMu sync.Mutex
	toolDecls   = map[*server]map[string]*declared{}
)

func (s *server) declarations(t testing.TB) map[string]*declared {
	t.Helper()
	toolDeclsMu.Lock()
	defer toolDeclsMu.Unlock()
	if m := toolDecls[s]; m != nil {
		return m
	}
	id := s.ids.Add(1)
	status, b := s.post(t, []byte(`{"jsonrpc":"2.0","id":`+fmtJSON(id)+`,"method":"tools/list"}`))
	if status != 200 {
		t.Fatalf("tools/list: HTTP %d: %s", status, b)
	}
	var r struct {
		Result struct {
			Tools []*declared `json:"tools"`
		} `json:"result"`
	}
	must(t, json.Unmarshal(b, &r))
	m := map[string]*declared{}
	for _, d := range r.Result.Tools {
		if len(d.OutputSchema) > 0 {
			rs, err := resolveSchema(d.OutputSchema)
			if err != nil {
				t.Fatalf("%s: outputSchema: %v", d.Name, err)
			}
			d.out = rs
		}
		m[d.Name] = d
	}
	toolDecls[s] = m
	return m
}

func resolveSchema(b json.RawMessage) (*jsonschema.Resolved, error) {
	var sch jsonschema.Schema
	if err := json.Unmarshal(b, &sch); err != nil {
		return nil, err
	}
	return sch.Resolve(nil)
}

// conforms reports why a result does not conform to its tool's
// declaration (nil if it does).
func conforms(d *declared, r *toolResult) error {
	if d == nil {
		return fmt.Errorf("tool not listed")
	}
	has := len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null"
	switch {
	case d.out == nil && has:
		return fmt.Errorf("structuredContent without a declared outputSchema: %s", r.StructuredContent)
	case d.out == nil:
		return nil
	case !has && r.IsError:
		return nil
	case !has:
		return fmt.Errorf("outputSchema declared but no structuredContent: %s", r.Text())
	}
	var v any
	if err := json.Unmarshal(r.StructuredContent, &v); err != nil {
		return err
	}
	if err := d.out.Validate(v); err != nil {
		return fmt.Errorf("structuredContent does not conform to the outputSchema: %w\n%s", err, r.StructuredContent)
	}
	return nil
}

// checkResult fails the test when r does not conform (see above).
func (s *server) checkResult(t testing.TB, tool string, r *toolResult) {
	t.Helper()
	if err := conforms(s.declarations(t)[tool], r); err != nil {
		t.Errorf("%s (isError %v): %v", tool, r.IsError, err)
	}
}

// checkExchange checks the result of a raw tools/call exchange (the
// golden transcripts): the same rules as checkResult.
func (s *server) checkExchange(t testing.TB, body, resp []byte) {
	t.Helper()
	var req struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	var r rpcResponse
	if json.Unmarshal(body, &req) != nil || req.Method != "tools/call" || json.Unmarshal(resp, &r) != nil || r.Result == nil {
		return
	}
	s.checkResult(t, req.Params.Name, r.Result)
}

// TestConforms: the check itself fails on each kind of non-conforming
// result (so that its passing over the suite means something).
func TestConforms(t *testing.T) {
	defaultEngine(t, "the answers' JSON schemas: the plugins' declarations")
	rs, err := resolveSchema(json.RawMessage(`{"additionalProperties":false,"properties":{"n":{"type":"integer"}},"required":["n"],"type":"object"}`))
	must(t, err)
	withSchema := &declared{Name: "t", out: rs}
	without := &declared{Name: "t"}
	// res is a result from its JSON.
	res := func(js string) toolResult {
		var r toolResult
		must(t, json.Unmarshal([]byte(js), &r))
		return r
	}
	for _, c := range []struct {
		name string
		d    *declared
		r    toolResult
		ok   bool
	}{
		{"conforming", withSchema, res(`{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1}}`), true},
		{"conforming error", withSchema, res(`{"content":[{"type":"text","text":"{\"n\":2}"}],"structuredContent":{"n":2},"isError":true}`), true},
		{"plain-text error", withSchema, res(`{"content":[{"type":"text","text":"boom"}],"isError":true}`), true},
		{"plain text, no schema", without, res(`{"content":[{"type":"text","text":"hi"}]}`), true},
		{"wrong type", withSchema, res(`{"structuredContent":{"n":"1"}}`), false},
		{"extra field", withSchema, res(`{"structuredContent":{"n":1,"m":2}}`), false},
		{"missing field in an error", withSchema, res(`{"structuredContent":{},"isError":true}`), false},
		{"success without structuredContent", withSchema, res(`{"content":[{"type":"text","text":"{\"n\":1}"}]}`), false},
		{"structuredContent without schema", without, res(`{"structuredContent":{"n":1}}`), false},
		{"unlisted tool", nil, res(`{"content":[{"type":"text","text":"hi"}]}`), false},
	} {
		err := conforms(c.d, &c.r)
		if (err == nil) != c.ok {
			t.Errorf("%s: conforms = %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// TestDeclarations: every built-in has a title and states all four
// behaviour hints, truthfully; those whose text is a JSON object declare
// an outputSchema (and, through checkResult, answer to it).
func TestDeclarations(t *testing.T) {
	defaultEngine(t, "the tools' declared schemas: the plugins' declarations")
	decls := sharedServer(t, "").declarations(t)
	type hints struct{ readOnly, destructive, idempotent, openWorld bool }
	want := map[string]struct {
		h      hints
		schema bool
	}{
		"sandbox_execute_bash":       {hints{false, true, false, true}, true},
		"sandbox_execute_code":       {hints{false, true, false, true}, true},
		"sandbox_file_operations":    {hints{false, true, false, false}, true},
		"sandbox_str_replace_editor": {hints{false, true, false, false}, true},
		"sandbox_get_context":        {hints{true, false, true, false}, true},
		"sandbox_get_packages":       {hints{true, false, true, false}, false},
		"sandbox_load_skill":         {hints{true, false, true, false}, false},
		"browser_get_info":           {hints{true, false, true, true}, true},
		"browser_gui_screenshot":     {hints{true, false, true, true}, false},
		"browser_gui_execute_action": {hints{false, true, false, true}, true},
	}
	if len(want) != len(builtins) {
		t.Fatalf("%d expectations for %d built-ins", len(want), len(builtins))
	}
	for _, b := range builtins {
		d, w := decls[b.name], want[b.name]
		if d == nil {
			t.Errorf("%s not listed", b.name)
			continue
		}
		if d.Title == "" {
			t.Errorf("%s has no title", b.name)
		}
		a := d.Annotations
		if a == nil || a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: not every hint is stated: %+v", b.name, a)
			continue
		}
		if got := (hints{*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, *a.OpenWorldHint}); got != w.h {
			t.Errorf("%s hints (readOnly, destructive, idempotent, openWorld) = %v, want %v", b.name, got, w.h)
		}
		if (d.out != nil) != w.schema {
			t.Errorf("%s: outputSchema declared %v, want %v", b.name, d.out != nil, w.schema)
		}
		var sch struct {
			Type string `json:"type"`
		}
		if d.out != nil && (json.Unmarshal(d.OutputSchema, &sch) != nil || sch.Type != "object") {
			t.Errorf("%s: outputSchema is not an object schema: %s", b.name, d.OutputSchema)
		}
	}
}
