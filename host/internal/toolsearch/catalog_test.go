package toolsearch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/mcp/catalog"
)

// The test catalogue: testdata/builtins.json (the ten built-ins' and the
// 21 page tools' definitions as their manifests declare them) followed by
// the tools of testdata/servers.txt, each server's published as
// <prefix>_<tool> (upstream naming).

var (
	catOnce sync.Once
	catDefs []json.RawMessage
	catErr  error
)

// testTools returns the test catalogue's tool definitions, the first n of
// them (n <= 0: all).
func testTools(t testing.TB, n int) []json.RawMessage {
	t.Helper()
	catOnce.Do(func() { catDefs, catErr = loadTestTools() })
	if catErr != nil {
		t.Fatal(catErr)
	}
	if n <= 0 || n > len(catDefs) {
		return catDefs
	}
	return catDefs[:n]
}

// listing renders definitions as a tools/list array.
func listing(defs []json.RawMessage) []byte {
	b := []byte{'['}
	for i, d := range defs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, d...)
	}
	return append(b, ']')
}

func loadTestTools() ([]json.RawMessage, error) {
	raw, err := os.ReadFile("testdata/builtins.json")
	if err != nil {
		return nil, err
	}
	var defs []json.RawMessage
	if err := json.Unmarshal(raw, &defs); err != nil {
		return nil, err
	}
	for i, d := range defs { // as tools/list renders them
		var b bytes.Buffer
		if err := json.Compact(&b, d); err != nil {
			return nil, err
		}
		defs[i] = b.Bytes()
	}
	f, err := os.Open("testdata/servers.txt")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var prefix string
	var titles bool
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "@"):
			f := strings.Fields(line[1:])
			prefix, titles = f[1], len(f) > 2 && f[2] == "titles"
			continue
		}
		parts := strings.SplitN(line, "|", 3)
		for len(parts) < 3 {
			parts = append(parts, "")
		}
		name := strings.TrimSpace(parts[0])
		if !strings.HasPrefix(name, prefix+"_") && name != prefix {
			name = prefix + "_" + name
		}
		props := map[string]any{}
		var required []string
		for _, p := range strings.Split(parts[2], ";") {
			k, desc, ok := strings.Cut(p, ":")
			if !ok {
				continue
			}
			k = strings.TrimSpace(k)
			typ := map[string]any{"type": "string"}
			if strings.HasSuffix(k, "*") {
				k = strings.TrimSuffix(k, "*")
				required = append(required, strings.TrimRight(k, "#?[]"))
			}
			switch {
			case strings.HasSuffix(k, "#"):
				k, typ = strings.TrimSuffix(k, "#"), map[string]any{"type": "integer"}
			case strings.HasSuffix(k, "?"):
				k, typ = strings.TrimSuffix(k, "?"), map[string]any{"type": "boolean"}
			case strings.HasSuffix(k, "[]"):
				k, typ = strings.TrimSuffix(k, "[]"), map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
			}
			typ["description"] = strings.TrimSpace(desc)
			props[k] = typ
		}
		schema := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			schema["required"] = required
		}
		def := map[string]any{"name": name, "description": strings.TrimSpace(parts[1]), "inputSchema": schema}
		if titles {
			words := strings.Split(strings.TrimPrefix(name, prefix+"_"), "_")
			words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
			def["annotations"] = map[string]any{"title": strings.Join(words, " "), "readOnlyHint": strings.HasPrefix(words[0], "Get") || strings.HasPrefix(words[0], "List") || strings.HasPrefix(words[0], "Search")}
		}
		b, err := json.Marshal(def)
		if err != nil {
			return nil, err
		}
		defs = append(defs, b)
	}
	return defs, sc.Err()
}

// stubCatalog is an mcp.Catalog serving a tool list that tests swap; its
// calls answer {"called": name}.
type stubCatalog struct {
	mu     sync.Mutex
	snap   *mcp.Snapshot
	gen    uint64
	onSwap []func(*mcp.Snapshot)
	calls  []string
}

func newStub(list []byte) *stubCatalog {
	s := &stubCatalog{}
	s.snap = catalog.NewSnapshot(0, list, nil, nil, nil, nil)
	return s
}

// swap replaces the tools (a reload), telling OnSwap's functions.
func (s *stubCatalog) swap(list []byte) {
	s.mu.Lock()
	s.gen++
	s.snap = catalog.NewSnapshot(s.gen, list, nil, nil, nil, nil)
	snap, fs := s.snap, append([]func(*mcp.Snapshot){}, s.onSwap...)
	s.mu.Unlock()
	for _, f := range fs {
		f(snap)
	}
}

func (s *stubCatalog) Snapshot() *mcp.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap
}

func (s *stubCatalog) OnSwap(f func(*mcp.Snapshot)) {
	s.mu.Lock()
	s.onSwap = append(s.onSwap, f)
	s.mu.Unlock()
}

func (s *stubCatalog) CallTool(_ context.Context, req mcp.CallRequest) ([]byte, error) {
	list := s.Snapshot().ToolsJSON()
	if !bytes.Contains(list, []byte(`"name":"`+req.Name+`"`)) {
		return nil, mcp.ErrUnknownTool
	}
	s.mu.Lock()
	s.calls = append(s.calls, req.Name)
	s.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": "called " + req.Name}}, "isError": false})
	return b, nil
}

func (s *stubCatalog) GetPrompt(context.Context, mcp.CallRequest) ([]byte, error) {
	return nil, mcp.ErrUnknownPrompt
}
func (s *stubCatalog) ReadResource(context.Context, mcp.CallRequest) ([]byte, error) {
	return nil, mcp.ErrUnknownResource
}
func (s *stubCatalog) Complete(context.Context, mcp.CallRequest) ([]byte, error) {
	return nil, mcp.ErrUnknownPrompt
}
