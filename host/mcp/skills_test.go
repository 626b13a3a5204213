package mcp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/skills"
)

func TestSkillsExtension(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "demo")
	if err := os.MkdirAll(filepath.Join(dir, "ref"), 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: demo\ndescription: A demo.\n---\nbody\n"
	for p, s := range map[string]string{"SKILL.md": md, "ref/a.md": "alpha"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := NewServer(echoRegistry(t), Options{Skills: skills.New([]string{root})})
	defer s.Close()
	plain := NewServer(echoRegistry(t), Options{})
	defer plain.Close()

	_, d := taskRPC(t, s, "", plainMeta, "server/discover", `{}`)
	if !strings.Contains(fmt.Sprint(result(t, d)["capabilities"]), "io.modelcontextprotocol/skills:map[directoryRead:true]") {
		t.Fatalf("discover: %v", d)
	}
	if _, d := taskRPC(t, plain, "", plainMeta, "server/discover", `{}`); strings.Contains(fmt.Sprint(d), "skills") {
		t.Fatalf("skills declared without AIO_SKILLS_PATH: %v", d)
	}

	_, l := taskRPC(t, s, "", plainMeta, "skills/list", `{}`)
	got := fmt.Sprint(result(t, l)["skills"])
	for _, want := range []string{"uri:skill://demo/SKILL.md", "frontmatter:map[description:A demo. name:demo]",
		"uri:skill://demo/ref/a.md", "size:5", "digest:sha256:8ed3f6ad"} {
		if !strings.Contains(got, want) {
			t.Fatalf("skills/list lacks %q: %s", want, got)
		}
	}
	if r := result(t, l); r["cacheScope"] != "public" || r["ttlMs"] != float64(0) {
		t.Fatalf("skills/list caching: %v", r)
	}
	if _, g := taskRPC(t, s, "", plainMeta, "skills/get", `{"uri":"skill://demo/SKILL.md"}`); !strings.Contains(fmt.Sprint(result(t, g)["skill"]), "skill://demo/ref/a.md") {
		t.Fatalf("skills/get: %v", g)
	}
	if st, g := taskRPC(t, s, "", plainMeta, "skills/get", `{"uri":"skill://nope/SKILL.md"}`); st != 400 || errCode(g) != CodeInvalidParams {
		t.Fatalf("skills/get unknown: %d %v", st, g)
	}
	h := mapHeaders{"mcp-protocol-version": "2026-07-28", "mcp-method": "resources/read", "mcp-name": "skill://demo/ref/a.md"}
	_, body := serveJSON(t, s, h, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"skill://demo/ref/a.md",`+plainMeta+`}}`)
	if !strings.Contains(body, `"text":"alpha"`) || !strings.Contains(body, `"mimeType":"text/markdown"`) {
		t.Fatalf("resources/read: %s", body)
	}
	h["mcp-name"] = "skill://demo/../demo/SKILL.md"
	if st, body := serveJSON(t, s, h, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"skill://demo/../demo/SKILL.md",`+plainMeta+`}}`); st != 400 || !strings.Contains(body, "-32602") {
		t.Fatalf("resources/read with ..: %d %s", st, body)
	}
	_, rl := taskRPC(t, s, "", plainMeta, "resources/list", `{}`)
	if !strings.Contains(fmt.Sprint(result(t, rl)["resources"]), "uri:skill://demo/SKILL.md") {
		t.Fatalf("resources/list: %v", rl)
	}
	_, dr := taskRPC(t, s, "", plainMeta, "resources/directory/read", `{"uri":"skill://demo"}`)
	if got := fmt.Sprint(result(t, dr)["resources"]); !strings.Contains(got, "mimeType:inode/directory name:ref uri:skill://demo/ref") {
		t.Fatalf("directory read: %s", got)
	}
	if st, dr := taskRPC(t, s, "", plainMeta, "resources/directory/read", `{"uri":"skill://demo/SKILL.md"}`); st != 400 || errCode(dr) != CodeInvalidParams {
		t.Fatalf("directory read of a file: %d %v", st, dr)
	}

	// A new skill is served without a restart.
	time.Sleep(600 * time.Millisecond)
	fresh := filepath.Join(root, "fresh")
	if err := os.MkdirAll(fresh, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fresh, "SKILL.md"), []byte(strings.ReplaceAll(md, "demo", "fresh")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, l := taskRPC(t, s, "", plainMeta, "skills/list", `{}`); !strings.Contains(fmt.Sprint(l), "skill://fresh/SKILL.md") {
		t.Fatalf("a skill added is not listed: %v", l)
	}
}
