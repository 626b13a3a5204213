package tenant

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/skills"
)

type headers map[string]string

func (h headers) Get(n string) string { return h[n] }

// TestSkillsFollowAllowList: the skills extension obeys the tenant's
// globs as resources do: skills/list shows only the skills the tenant may
// use, and skills/get, resources/read and resources/directory/read of a
// hidden skill answer exactly as for a skill that does not exist (the
// protocol layer's own answer, so this fails if the two drift apart).
func TestSkillsFollowAllowList(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"alpha", "beta"} {
		if err := os.MkdirAll(filepath.Join(root, n, "refs"), 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + n + "\ndescription: The " + n + " skill.\n---\nDo " + n + ".\n"
		if err := os.WriteFile(filepath.Join(root, n, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, n, "refs", "a.md"), []byte("ref"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set := New(map[string]caps.Tenant{
		"dana":  {Tools: []string{"skill://alpha/*"}},
		"carol": {},
	}, "")
	srv := mcp.NewServer(nil, mcp.Options{Middleware: []mcp.Middleware{set.Middleware(), set.Filter()}, Skills: skills.New([]string{root})})
	defer srv.Close()
	ask := func(owner, method, uri string, legacy bool) (res, errBody string) {
		t.Helper()
		params := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
		h := headers{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
		if legacy {
			params, h = `{`, headers{"Accept": "application/json, text/event-stream"}
		}
		if uri != "" {
			params += `,"uri":"` + uri + `"`
			if method == "resources/read" {
				h["Mcp-Name"] = uri
			}
		}
		params = strings.Replace(params+"}", "{,", "{", 1)
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
		r := srv.Serve(context.Background(), &mcp.Exchange{Method: "POST", Header: h, Body: []byte(body), Principal: mcp.Principal{Owner: owner}})
		var m struct {
			Result json.RawMessage
			Error  json.RawMessage
		}
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatalf("%s %s: %d %s", method, uri, r.Status, r.Body)
		}
		return string(m.Result), string(m.Error)
	}
	listed := func(owner string) []string {
		res, e := ask(owner, "skills/list", "", false)
		var l struct{ Skills []struct{ URI string } }
		if e != "" || json.Unmarshal([]byte(res), &l) != nil {
			t.Fatalf("skills/list of %s: %s %s", owner, res, e)
		}
		var out []string
		for _, s := range l.Skills {
			out = append(out, s.URI)
		}
		return out
	}
	if got := strings.Join(listed("dana"), ","); got != "skill://alpha/SKILL.md" {
		t.Errorf("dana lists %s", got)
	}
	if got := listed("carol"); len(got) != 0 {
		t.Errorf("carol lists %v", got)
	}
	if got := listed("default"); len(got) != 2 {
		t.Errorf("the unrestricted tenant lists %v", got)
	}
	for _, c := range []struct {
		method, hidden, missing string
		legacy                  bool
	}{
		{"skills/get", "skill://beta/SKILL.md", "skill://gamma/SKILL.md", false},
		{"resources/read", "skill://beta/SKILL.md", "skill://gamma/SKILL.md", false},
		{"resources/read", "skill://beta/refs/a.md", "skill://gamma/refs/a.md", true},
		{"resources/directory/read", "skill://beta/refs", "skill://gamma/refs", false},
		{"resources/directory/read", "skill://beta", "skill://gamma", false},
	} {
		_, he := ask("dana", c.method, c.hidden, c.legacy)
		_, me := ask("dana", c.method, c.missing, c.legacy)
		if he == "" || strings.ReplaceAll(he, "beta", "gamma") != me {
			t.Errorf("%s: a hidden skill answers %s, a missing one %s: they must look alike", c.method, he, me)
		}
		if res, e := ask("default", c.method, c.hidden, c.legacy); e != "" || res == "" {
			t.Errorf("%s %s, unrestricted: %s", c.method, c.hidden, e)
		}
	}
	for _, c := range []struct{ method, uri string }{
		{"skills/get", "skill://alpha/SKILL.md"}, {"resources/read", "skill://alpha/refs/a.md"},
		{"resources/directory/read", "skill://alpha"}, {"resources/directory/read", "skill://alpha/refs"},
	} {
		if res, e := ask("dana", c.method, c.uri, false); e != "" || res == "" {
			t.Errorf("dana's own %s %s: %s", c.method, c.uri, e)
		}
	}
}
