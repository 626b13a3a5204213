// Command aoidocs is a Machine Mode tool (AOI-CLI v0.2) written from the
// public specification for aiod's adapter tests (host/machinetest). Its
// first argument picks a persona: "docs" is a conforming tool with a
// bounded, streamed search with a cursor, a destructive delete that
// requires confirmation, errors of each scope and misbehaving commands
// (crash, flood, hang, prose); the others have broken discovery.
//
//	aoidocs PERSONA capabilities --output json
//	aoidocs PERSONA schema --output json --command NAME
//	aoidocs PERSONA COMMAND [--flag=value...] --output jsonl [--] [operands...]
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	tool        = "aoi-docs"
	toolVersion = "1.0.0"
	schemaName  = "com.example.aoidocs.events"
)

var out = bufio.NewWriter(os.Stdout)

func emit(ev map[string]any) {
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	out.Write(b)
	out.WriteByte('\n')
	if err := out.Flush(); err != nil {
		os.Exit(141) // the reader is gone (EPIPE): exit quietly
	}
}

func meta(command string) {
	emit(map[string]any{"type": "aoi:meta", "tool": tool, "tool_version": toolVersion, "aoi_version": "0.2",
		"schema_name": schemaName, "schema_version": "1.0.0", "command": command})
}

// commands of the docs persona, as capabilities lists them.
var commands = []map[string]any{
	{"name": "search", "description": "Search the documents for a word.", "read_only": true, "bounded": true, "supports_cursor": true,
		"event_types": []string{"aoi:meta", "hit", "aoi:progress", "aoi:summary"},
		"operands":    []any{map[string]any{"name": "query", "type": "string", "required": true, "description": "The word to look for"}},
		"flags": []any{
			map[string]any{"name": "limit", "type": "integer", "description": "At most this many hits (default 3)"},
			map[string]any{"name": "tag", "type": "string", "repeatable": true, "description": "Only documents with this tag"},
			map[string]any{"name": "exact-case", "type": "boolean", "description": "Match case"},
		}},
	{"name": "delete", "description": "Delete a document.", "read_only": false, "destructive": true, "requires_confirm": true,
		"supports_dry_run": true, "supports_idempotency_key": true,
		"event_types": []string{"aoi:meta", "deleted", "aoi:plan", "aoi:error", "aoi:summary"},
		"operands":    []any{map[string]any{"name": "id", "type": "string", "required": true}}},
	{"name": "fail", "description": "Fail in the way asked for.", "read_only": true,
		"event_types": []string{"aoi:meta", "hit", "aoi:warning", "aoi:error", "aoi:summary"},
		"flags":       []any{map[string]any{"name": "scope", "type": "string", "enum": []string{"item", "process", "authn", "not-ok"}, "required": true}}},
	{"name": "crash", "description": "Start, then die before the summary.", "read_only": true, "event_types": []string{"aoi:meta", "hit", "aoi:summary"}},
	{"name": "flood", "description": "Write hits without end.", "read_only": true, "event_types": []string{"aoi:meta", "hit", "aoi:summary"}},
	{"name": "hang", "description": "Never finish.", "read_only": true, "event_types": []string{"aoi:meta", "aoi:heartbeat", "aoi:summary"}},
	{"name": "prose", "description": "Print prose on stdout.", "read_only": true, "event_types": []string{"aoi:meta", "hit", "aoi:summary"}},
	{"name": "inspect", "description": "Report the environment, working directory and stdin it was given.", "read_only": true,
		"event_types": []string{"aoi:meta", "facts", "aoi:summary"}},
	{"name": "progress", "description": "Report progress while it works.", "read_only": true, "bounded": true,
		"event_types": []string{"aoi:meta", "aoi:progress", "hit", "aoi:summary"},
		"flags":       []any{map[string]any{"name": "steps", "type": "integer"}, map[string]any{"name": "pause-ms", "type": "integer"}}},
	{"name": "many", "description": "Emit N hits at once.", "read_only": true,
		"event_types": []string{"aoi:meta", "hit", "aoi:summary"},
		"flags":       []any{map[string]any{"name": "count", "type": "integer", "required": true}}},
}

// eventSchema is the schema of a command's events: hits use a $ref into
// its own $defs (the adapter re-bases them).
func eventSchema(name string, types []string) map[string]any {
	return map[string]any{
		"$schema":  "https://json-schema.org/draft/2020-12/schema",
		"$id":      "https://example.com/aoidocs/" + name + ".json",
		"title":    "aoi-docs " + name + " event",
		"type":     "object",
		"required": []string{"type"},
		"properties": map[string]any{
			"type":  map[string]any{"enum": types},
			"rank":  map[string]any{"$ref": "#/$defs/rank"},
			"id":    map[string]any{"type": "string"},
			"title": map[string]any{"type": "string"},
		},
		"$defs": map[string]any{"rank": map[string]any{"type": "integer", "minimum": 1}},
	}
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: aoidocs PERSONA COMMAND ...")
		os.Exit(2)
	}
	persona, cmd, args := os.Args[1], os.Args[2], os.Args[3:]
	fmt.Fprintln(os.Stderr, "aoidocs: secret diagnostics on stderr: TOKEN=stderr-secret")
	switch cmd {
	case "capabilities":
		capabilities(persona)
		return
	case "schema":
		schema(persona, args)
		return
	}
	run(cmd, args)
}

func capabilities(persona string) {
	caps := map[string]any{"tool": tool, "tool_version": toolVersion, "aoi_versions": []string{"0.2"},
		"schemas": []any{map[string]any{"name": schemaName, "versions": []string{"1.0.0"}, "default": "1.0.0"}}, "commands": commands}
	switch persona {
	case "broken":
		fmt.Println("aoi-docs 1.0.0 -- usage: aoi-docs [search|delete] (this is not JSON)")
		return
	case "liar":
		// lists an event type its schema does not allow
		caps["commands"] = []any{map[string]any{"name": "get", "read_only": true, "event_types": []string{"aoi:meta", "item", "aoi:summary"}}}
	case "badschema", "unlisted":
		caps["commands"] = []any{map[string]any{"name": "get", "read_only": true}}
	case "failing":
		fmt.Fprintln(os.Stderr, "cannot start")
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(caps)
}

func schema(persona string, args []string) {
	name := ""
	for i, a := range args {
		if a == "--command" && i+1 < len(args) {
			name = args[i+1]
		}
	}
	switch persona {
	case "liar":
		json.NewEncoder(os.Stdout).Encode(eventSchema(name, []string{"aoi:meta", "thing", "aoi:summary"}))
		return
	case "badschema":
		fmt.Println(`{"type": 12, "properties": "none"}`)
		return
	case "unlisted":
		// the schema of a command capabilities does not list
		s := eventSchema("other", []string{"aoi:meta", "aoi:summary"})
		s["command"] = "other"
		json.NewEncoder(os.Stdout).Encode(s)
		return
	}
	for _, c := range commands {
		if c["name"] == name {
			json.NewEncoder(os.Stdout).Encode(eventSchema(name, c["event_types"].([]string)))
			return
		}
	}
	fmt.Fprintln(os.Stderr, "unknown command", name)
	os.Exit(2)
}

// parsed is a command line: --flag=value (or --flag value for --output),
// boolean --flag, and operands (after "--" or not starting with "-").
type parsed struct {
	flags map[string][]string
	ops   []string
}

func parse(args []string) parsed {
	p := parsed{flags: map[string][]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.ops = append(p.ops, args[i+1:]...)
			return p
		case a == "--output" && i+1 < len(args):
			p.flags["output"] = append(p.flags["output"], args[i+1])
			i++
		case strings.HasPrefix(a, "--"):
			k, v, ok := strings.Cut(a[2:], "=")
			if !ok {
				v = "true"
			}
			p.flags[k] = append(p.flags[k], v)
		default:
			p.ops = append(p.ops, a)
		}
	}
	return p
}

func (p parsed) one(k string) string {
	if v := p.flags[k]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

var corpus = []struct{ id, title, tag string }{
	{"doc_1", "Agent-operable interfaces", "spec"},
	{"doc_2", "Cooking for agents", "food"},
	{"doc_3", "The agent and the shell", "spec"},
	{"doc_4", "Gardening", "home"},
	{"doc_5", "Agent discovery before invocation", "spec"},
	{"doc_6", "Bounded reads for agents", "spec"},
	{"doc_7", "Tea", "food"},
	{"doc_8", "Agent errors and retries", "spec"},
	{"doc_9", "Streams that agent tools write", "spec"},
	{"doc_10", "Why agents need a summary", "spec"},
}

func run(cmd string, args []string) {
	p := parse(args)
	if p.one("output") != "jsonl" {
		fmt.Println("aoi-docs: human mode is not implemented; use --output jsonl")
		os.Exit(2)
	}
	switch cmd {
	case "search":
		search(p)
	case "delete":
		del(p)
	case "fail":
		fail(p)
	case "crash":
		meta(cmd)
		emit(map[string]any{"type": "hit", "rank": 1, "id": "doc_1", "title": corpus[0].title})
		fmt.Fprintln(os.Stderr, "panic: the index is corrupt")
		os.Exit(3)
	case "flood":
		meta(cmd)
		for i := 1; ; i++ {
			emit(map[string]any{"type": "hit", "rank": i, "id": "doc_" + strconv.Itoa(i), "title": strings.Repeat("flood ", 20)})
		}
	case "hang":
		meta(cmd)
		emit(map[string]any{"type": "aoi:heartbeat"})
		time.Sleep(time.Hour)
	case "prose":
		meta(cmd)
		fmt.Println("Found 1 result:")
		emit(map[string]any{"type": "hit", "rank": 1, "id": "doc_1", "title": corpus[0].title})
		emit(map[string]any{"type": "aoi:summary", "ok": true, "count": 1, "truncated": false})
	case "inspect":
		meta(cmd)
		in, _ := io.ReadAll(os.Stdin)
		wd, _ := os.Getwd()
		env := map[string]string{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		// the network interfaces it sees
		var nets []string
		if b, err := os.ReadFile("/proc/net/dev"); err == nil {
			for _, l := range strings.Split(string(b), "\n")[2:] {
				if n, _, ok := strings.Cut(l, ":"); ok {
					nets = append(nets, strings.TrimSpace(n))
				}
			}
		}
		emit(map[string]any{"type": "facts", "env": env, "env_names": keys, "cwd": wd, "stdin": string(in), "uid": os.Getuid(), "net": nets})
		emit(map[string]any{"type": "aoi:summary", "ok": true, "count": 1, "truncated": false})
	case "progress":
		meta(cmd)
		steps, _ := strconv.Atoi(p.one("steps"))
		pause, _ := strconv.Atoi(p.one("pause-ms"))
		for i := 1; i <= steps; i++ {
			emit(map[string]any{"type": "aoi:progress", "progress": i, "total": steps, "message": fmt.Sprintf("step %d of %d", i, steps)})
			time.Sleep(time.Duration(pause) * time.Millisecond)
		}
		emit(map[string]any{"type": "hit", "rank": 1, "id": "doc_1", "title": "done"})
		emit(map[string]any{"type": "aoi:summary", "ok": true, "count": 1, "truncated": false})
	case "many":
		meta(cmd)
		n, _ := strconv.Atoi(p.one("count"))
		for i := 1; i <= n; i++ {
			b := strconv.AppendInt([]byte(`{"type":"hit","rank":`), int64(i), 10)
			b = append(b, `,"id":"doc_`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `","title":"A document about agent-operable tools"}`+"\n"...)
			out.Write(b)
		}
		emit(map[string]any{"type": "aoi:summary", "ok": true, "count": n, "truncated": false})
	default:
		meta(cmd)
		emit(map[string]any{"type": "aoi:error", "scope": "process", "category": "usage", "code": "UNKNOWN_COMMAND",
			"message": "unknown command " + cmd, "retryable": false})
		emit(map[string]any{"type": "aoi:summary", "ok": false, "count": 0, "truncated": false})
		os.Exit(2)
	}
}

func search(p parsed) {
	meta("search")
	if len(p.ops) != 1 {
		emit(map[string]any{"type": "aoi:error", "scope": "process", "category": "usage", "code": "BAD_OPERANDS",
			"message": fmt.Sprintf("want one query, got %q", p.ops), "retryable": false})
		emit(map[string]any{"type": "aoi:summary", "ok": false, "count": 0, "truncated": false})
		os.Exit(2)
	}
	q := p.ops[0]
	limit := 3
	if l := p.one("limit"); l != "" {
		limit, _ = strconv.Atoi(l)
	}
	offset := 0
	if c := p.one("cursor"); c != "" {
		offset, _ = strconv.Atoi(strings.TrimPrefix(c, "off:"))
	}
	tags := p.flags["tag"]
	var hits []int
	for i, d := range corpus {
		title := d.title
		if p.one("exact-case") != "true" {
			title, q = strings.ToLower(title), strings.ToLower(q)
		}
		if !strings.Contains(title, q) {
			continue
		}
		if len(tags) > 0 && !contains(tags, d.tag) {
			continue
		}
		hits = append(hits, i)
	}
	n := 0
	for k := offset; k < len(hits) && n < limit; k++ {
		d := corpus[hits[k]]
		emit(map[string]any{"type": "aoi:progress", "progress": n + 1, "total": min(limit, len(hits)-offset), "message": "ranking"})
		emit(map[string]any{"type": "hit", "rank": k + 1, "id": d.id, "title": d.title})
		n++
	}
	sum := map[string]any{"type": "aoi:summary", "ok": true, "count": n, "truncated": offset+n < len(hits)}
	if offset+n < len(hits) {
		sum["next_cursor"] = "off:" + strconv.Itoa(offset+n)
	}
	emit(sum)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func del(p parsed) {
	meta("delete")
	id := ""
	if len(p.ops) > 0 {
		id = p.ops[0]
	}
	switch {
	case p.one("dry-run") == "true":
		emit(map[string]any{"type": "aoi:plan", "action": "delete", "id": id})
		emit(map[string]any{"type": "aoi:summary", "ok": true, "count": 0, "truncated": false, "dry_run": true})
	case p.one("confirm") != "true":
		emit(map[string]any{"type": "aoi:error", "scope": "process", "category": "usage", "code": "CONFIRM_REQUIRED",
			"message": "delete requires --confirm", "retryable": false, "hint": "pass --confirm, or --dry-run to see what would be deleted"})
		emit(map[string]any{"type": "aoi:summary", "ok": false, "count": 0, "truncated": false})
		os.Exit(2)
	default:
		// the side effect, visible to the test in the working directory
		os.WriteFile("deleted-"+id, []byte(p.one("idempotency-key")), 0o644)
		emit(map[string]any{"type": "deleted", "id": id})
		emit(map[string]any{"type": "aoi:summary", "ok": true, "count": 1, "truncated": false})
	}
}

func fail(p parsed) {
	meta("fail")
	switch p.one("scope") {
	case "item":
		emit(map[string]any{"type": "hit", "rank": 1, "id": "doc_1", "title": corpus[0].title})
		emit(map[string]any{"type": "aoi:error", "scope": "item", "category": "not_found", "code": "DOC_MISSING",
			"message": "doc_404 is gone", "retryable": false})
		emit(map[string]any{"type": "aoi:warning", "message": "one document was skipped"})
		emit(map[string]any{"type": "aoi:summary", "ok": true, "count": 1, "truncated": false, "errors": 1})
	case "process":
		emit(map[string]any{"type": "aoi:error", "scope": "process", "category": "unavailable", "code": "INDEX_BUSY",
			"message": "the index is being rebuilt", "retryable": true, "hint": "try again in a minute"})
		emit(map[string]any{"type": "aoi:summary", "ok": false, "count": 0, "truncated": false})
		os.Exit(5)
	case "authn":
		emit(map[string]any{"type": "aoi:error", "scope": "process", "category": "authn", "code": "INTERACTIVE_REQUIRED",
			"message": "no credentials for the docs service", "retryable": false, "hint": "run `aoi-docs login` in a terminal"})
		emit(map[string]any{"type": "aoi:summary", "ok": false, "count": 0, "truncated": false})
		os.Exit(4)
	case "not-ok":
		emit(map[string]any{"type": "aoi:summary", "ok": false, "count": 0, "truncated": false})
		os.Exit(1)
	}
}
