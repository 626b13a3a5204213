package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// hideTool is what a tenant allow-list does through the seam: the tool is
// missing from tools/list, and calling it is answered exactly as calling
// a tool that does not exist.
func hideTool(hidden string) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, req *Request) (json.RawMessage, error) {
			if req.Method == "tools/call" && req.Name == hidden {
				return nil, UnknownTool(req.Name)
			}
			res, err := next(ctx, req)
			if err != nil || req.Method != "tools/list" {
				return res, err
			}
			var list map[string]json.RawMessage
			var tools []json.RawMessage
			if err := json.Unmarshal(res, &list); err != nil {
				return nil, err
			}
			if err := json.Unmarshal(list["tools"], &tools); err != nil {
				return nil, err
			}
			kept := tools[:0]
			for _, t := range tools {
				var d struct{ Name string }
				if json.Unmarshal(t, &d) == nil && d.Name != hidden {
					kept = append(kept, t)
				}
			}
			list["tools"], _ = json.Marshal(kept)
			return json.Marshal(list)
		}
	}
}

// observed is what an audit or metrics middleware sees of one call.
type observed struct {
	Method, Name, Era, Owner string
	Code                     int // 0: a result
}

type observer struct {
	mu   sync.Mutex
	seen []observed
}

func (o *observer) middleware(next Handler) Handler {
	return func(ctx context.Context, req *Request) (json.RawMessage, error) {
		res, err := next(ctx, req)
		ob := observed{Method: req.Method, Name: req.Name, Era: req.Era.String(), Owner: req.Owner()}
		var e *Error
		if errors.As(err, &e) {
			ob.Code = e.Code
		} else if err != nil {
			ob.Code = -1
		}
		o.mu.Lock()
		o.seen = append(o.seen, ob)
		o.mu.Unlock()
		return res, err
	}
}

func serveJSON(t *testing.T, s *Server, h mapHeaders, body string) (int, string) {
	t.Helper()
	if h == nil {
		h = mapHeaders{}
	}
	h["accept"] = "application/json, text/event-stream"
	r := s.Serve(context.Background(), &Exchange{Method: "POST", Header: h, Body: []byte(body)})
	if r.Stream != nil {
		return r.Status, string(drain(r.Stream))
	}
	return r.Status, string(r.Body)
}

func legacyCall(id int, method, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
}

func modernCall(id int, method, params string) (mapHeaders, string) {
	h := mapHeaders{"mcp-protocol-version": "2026-07-28", "mcp-method": method}
	var p struct{ Name, URI string }
	_ = json.Unmarshal([]byte(params), &p)
	if p.Name != "" {
		h["mcp-name"] = p.Name
	}
	params = strings.TrimSuffix(params, "}")
	if params != "{" {
		params += ","
	}
	return h, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}}`, id, method, params+modernMeta)
}

// TestMiddlewareSeam: one middleware hides a tool from tools/list and
// refuses its call as a missing tool would be refused, in both eras;
// another observes every call's method, name and outcome.
func TestMiddlewareSeam(t *testing.T) {
	reg := echoRegistry(t)
	obs := &observer{}
	s := NewServer(reg, Options{Middleware: []Middleware{obs.middleware, hideTool("echo")}})
	defer s.Close()
	plain := echoServer(t)

	// tools/list: echo is gone, the rest is there.
	_, all := serveJSON(t, plain, nil, legacyCall(1, "tools/list", `{}`))
	_, filtered := serveJSON(t, s, nil, legacyCall(1, "tools/list", `{}`))
	if !strings.Contains(all, `"name":"echo"`) || strings.Contains(filtered, `"name":"echo"`) {
		t.Fatalf("tools/list does not hide echo:\n%s", filtered)
	}
	if !strings.Contains(filtered, `"name":"test_tool_with_logging"`) {
		t.Fatalf("tools/list hid more than echo:\n%s", filtered)
	}
	h, b := modernCall(2, "tools/list", `{}`)
	if st, r := serveJSON(t, s, h, b); st != 200 || strings.Contains(r, `"name":"echo"`) || !strings.Contains(r, `"cacheScope"`) {
		t.Fatalf("modern tools/list: %d %s", st, r)
	}

	// tools/call of the hidden tool is answered as a missing tool's.
	same := func(hidden, missing string) bool {
		return strings.ReplaceAll(hidden, "echo", "?") == strings.ReplaceAll(missing, "nope", "?")
	}
	_, ok := serveJSON(t, plain, nil, legacyCall(3, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`))
	if !strings.Contains(ok, `"result"`) {
		t.Fatalf("echo fails without the middleware: %s", ok)
	}
	hs, hidden := serveJSON(t, s, nil, legacyCall(3, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`))
	ms, missing := serveJSON(t, plain, nil, legacyCall(3, "tools/call", `{"name":"nope","arguments":{"text":"hi"}}`))
	if hs != ms || !same(hidden, missing) || !strings.Contains(hidden, `"code":-32602`) {
		t.Fatalf("legacy: hidden tool answered %d %s, missing tool %d %s", hs, hidden, ms, missing)
	}
	h, b = modernCall(4, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`)
	hs, hidden = serveJSON(t, s, h, b)
	h, b = modernCall(4, "tools/call", `{"name":"nope","arguments":{"text":"hi"}}`)
	ms, missing = serveJSON(t, plain, h, b)
	if hs != ms || !same(hidden, missing) || !strings.Contains(hidden, `"code":-32602`) {
		t.Fatalf("modern: hidden tool answered %d %s, missing tool %d %s", hs, hidden, ms, missing)
	}

	// Every method the table serves passes the observer, with its outcome.
	obs.mu.Lock()
	obs.seen = nil
	obs.mu.Unlock()
	for _, c := range []struct{ method, params string }{
		{"tools/call", `{"name":"test_tool_with_logging","arguments":{}}`},
		{"tools/call", `{"name":"echo","arguments":{}}`},
		{"prompts/list", `{}`},
		{"prompts/get", `{"name":"test_prompt_with_arguments","arguments":{"arg1":"a","arg2":"b"}}`},
		{"resources/list", `{}`},
		{"resources/templates/list", `{}`},
		{"resources/read", `{"uri":"test://template/7/data"}`},
		{"resources/read", `{"uri":"test://missing"}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},"argument":{"name":"arg1","value":"test"}}`},
		{"ping", `{}`},
		{"nope/nope", `{}`},
	} {
		serveJSON(t, s, nil, legacyCall(5, c.method, c.params))
	}
	h, b = modernCall(6, "server/discover", `{}`)
	serveJSON(t, s, h, b)
	h, b = modernCall(7, "tools/call", `{"name":"test_tool_with_logging","arguments":{}}`)
	serveJSON(t, s, h, b)
	want := []observed{
		{"tools/call", "test_tool_with_logging", "legacy", "default", 0},
		{"tools/call", "echo", "legacy", "default", CodeInvalidParams},
		{"prompts/list", "", "legacy", "default", 0},
		{"prompts/get", "test_prompt_with_arguments", "legacy", "default", 0},
		{"resources/list", "", "legacy", "default", 0},
		{"resources/templates/list", "", "legacy", "default", 0},
		{"resources/read", "test://template/7/data", "legacy", "default", 0},
		{"resources/read", "test://missing", "legacy", "default", CodeLegacyNotFound},
		{"completion/complete", "", "legacy", "default", 0},
		{"ping", "", "legacy", "default", 0},
		{"nope/nope", "", "legacy", "default", CodeMethodNotFound},
		{"server/discover", "", "modern", "default", 0},
		{"tools/call", "test_tool_with_logging", "modern", "default", 0},
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if g, w := fmt.Sprint(obs.seen), fmt.Sprint(want); g != w {
		t.Fatalf("observed\n %v\nwant\n %v", g, w)
	}
}

// TestMiddlewareOrder: the first middleware is outermost, and an error a
// middleware returns that is not an *Error is an internal error.
func TestMiddlewareOrder(t *testing.T) {
	var order []string
	mark := func(name string) Middleware {
		return func(next Handler) Handler {
			return func(ctx context.Context, req *Request) (json.RawMessage, error) {
				order = append(order, name+">")
				res, err := next(ctx, req)
				order = append(order, "<"+name)
				return res, err
			}
		}
	}
	fail := func(Handler) Handler {
		return func(context.Context, *Request) (json.RawMessage, error) { return nil, errors.New("quota exceeded") }
	}
	s := NewServer(nil, Options{Middleware: []Middleware{mark("a"), mark("b"), fail}})
	defer s.Close()
	_, body := serveJSON(t, s, nil, legacyCall(1, "ping", `{}`))
	if got := strings.Join(order, " "); got != "a> b> <b <a" {
		t.Fatalf("order %q", got)
	}
	if want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error: quota exceeded"}}`; body != want {
		t.Fatalf("got %s, want %s", body, want)
	}
}
