package hostfn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
)

func grantState(maxBytes int64) *caps.Grant {
	scope := &caps.StateScope{MaxBytes: maxBytes}
	p := &caps.Policy{Default: &caps.Capabilities{State: scope}}
	m := &caps.Manifest{Name: "t", Capabilities: caps.Capabilities{State: scope}}
	return p.Allow(m, caps.Env{})
}

type stateEnv struct {
	store *StateStore
	defs  map[string]Def
}

func (e *stateEnv) call(t *testing.T, c *Call, name string, req any) (Code, map[string]any) {
	t.Helper()
	raw, ok := req.(string)
	if !ok {
		b, _ := json.Marshal(req)
		raw = string(b)
	}
	code, resp := guestCall(context.Background(), e.defs[name], c, []byte(raw))
	var m map[string]any
	if err := json.Unmarshal(resp, &m); err != nil {
		t.Fatalf("%s: response %q: %v", name, resp, err)
	}
	return code, m
}

func newStateEnv(storeMax int64) *stateEnv {
	s := NewStateStore(storeMax)
	return &stateEnv{store: s, defs: defsByName(NewState(s))}
}

func TestStateDefs(t *testing.T) {
	f := NewState(NewStateStore(0))
	var names []string
	for _, d := range f.Defs() {
		names = append(names, d.Name)
		if d.Module != "aiod:state" || len(d.Params) != 2 || len(d.Results) != 1 || d.Results[0] != I64 {
			t.Errorf("%s: bad signature", d.Name)
		}
	}
	if f.Name() != caps.State || strings.Join(names, ",") != "get,set,delete,list" {
		t.Errorf("family %s functions %v", f.Name(), names)
	}
}

func TestState(t *testing.T) {
	e := newStateEnv(0)
	g := grantState(100)
	alice := &Call{Plugin: "p", Owner: "alice", Grant: g}
	bob := &Call{Plugin: "p", Owner: "bob", Grant: g}
	other := &Call{Plugin: "q", Owner: "alice", Grant: g}
	none := &Call{Plugin: "p", Owner: "alice", Grant: (&caps.Policy{}).Allow(&caps.Manifest{Name: "p"}, caps.Env{})}
	steps := []struct {
		name string
		c    *Call
		fn   string
		req  any
		code Code
		want map[string]any
	}{
		{"get missing", alice, "get", StateKeyRequest{Key: "a"}, OK, map[string]any{"found": false, "value": ""}},
		{"set", alice, "set", StateSetRequest{Key: "a/1", Value: "one"}, OK, map[string]any{"bytes_used": 6.0, "max_bytes": 100.0}},
		{"get", alice, "get", StateKeyRequest{Key: "a/1"}, OK, map[string]any{"found": true, "value": "one"}},
		{"empty value is a value", alice, "set", StateSetRequest{Key: "a/2"}, OK, map[string]any{"bytes_used": 9.0}},
		{"get empty", alice, "get", StateKeyRequest{Key: "a/2"}, OK, map[string]any{"found": true, "value": ""}},
		{"overwrite counts once", alice, "set", StateSetRequest{Key: "a/1", Value: "uno!"}, OK, map[string]any{"bytes_used": 10.0}},
		{"set b", alice, "set", StateSetRequest{Key: "b", Value: "bee"}, OK, nil},
		{"list all", alice, "list", StateListRequest{}, OK, map[string]any{"keys": []any{"a/1", "a/2", "b"}, "truncated": false}},
		{"list prefix", alice, "list", StateListRequest{Prefix: "a/"}, OK, map[string]any{"keys": []any{"a/1", "a/2"}}},
		{"list page 1", alice, "list", StateListRequest{Limit: 2}, OK, map[string]any{"keys": []any{"a/1", "a/2"}, "truncated": true}},
		{"list page 2", alice, "list", StateListRequest{Limit: 2, After: "a/2"}, OK, map[string]any{"keys": []any{"b"}, "truncated": false}},
		{"other owner", bob, "get", StateKeyRequest{Key: "a/1"}, OK, map[string]any{"found": false}},
		{"other owner list", bob, "list", StateListRequest{}, OK, map[string]any{"keys": []any{}}},
		{"other plugin", other, "get", StateKeyRequest{Key: "a/1"}, OK, map[string]any{"found": false}},
		{"bob's own", bob, "set", StateSetRequest{Key: "a/1", Value: "bob"}, OK, map[string]any{"bytes_used": 6.0}},
		{"alice unchanged", alice, "get", StateKeyRequest{Key: "a/1"}, OK, map[string]any{"value": "uno!"}},
		{"too large", alice, "set", StateSetRequest{Key: "big", Value: strings.Repeat("x", 90)}, TooLarge, nil},
		{"failed set stored nothing", alice, "get", StateKeyRequest{Key: "big"}, OK, map[string]any{"found": false}},
		{"fills exactly", alice, "set", StateSetRequest{Key: "big", Value: strings.Repeat("x", 100-14-3)}, OK, map[string]any{"bytes_used": 100.0}},
		{"one more byte", alice, "set", StateSetRequest{Key: "c", Value: ""}, TooLarge, nil},
		{"shrinking is fine", alice, "set", StateSetRequest{Key: "big", Value: "x"}, OK, map[string]any{"bytes_used": 18.0}},
		{"delete", alice, "delete", StateKeyRequest{Key: "big"}, OK, map[string]any{"deleted": true}},
		{"delete again", alice, "delete", StateKeyRequest{Key: "big"}, OK, map[string]any{"deleted": false}},
		{"empty key", alice, "set", StateSetRequest{Value: "x"}, Invalid, nil},
		{"long key", alice, "get", StateKeyRequest{Key: strings.Repeat("k", 1025)}, Invalid, nil},
		{"bad limit", alice, "list", StateListRequest{Limit: -1}, Invalid, nil},
		{"unknown field", alice, "set", `{"key":"a","val":"x"}`, Invalid, nil},
		{"no grant", none, "get", StateKeyRequest{Key: "a"}, Denied, nil},
	}
	for _, st := range steps {
		code, resp := e.call(t, st.c, st.fn, st.req)
		if code != st.code {
			t.Fatalf("%s: code %v, want %v: %v", st.name, code, st.code, resp)
		}
		for k, v := range st.want {
			if fmt.Sprint(resp[k]) != fmt.Sprint(v) {
				t.Errorf("%s: %s = %v, want %v", st.name, k, resp[k], v)
			}
		}
	}
	if u := e.store.Usage("p", "alice"); u != 14 {
		t.Errorf("usage %d", u)
	}
	e.store.Drop("p", "alice")
	if _, ok := e.store.Get("p", "alice", "a/1"); ok {
		t.Error("drop kept keys")
	}
	if e.store.Usage("p", "bob") != 6 {
		t.Error("drop touched another owner")
	}
}

func TestStateStoreFull(t *testing.T) {
	e := newStateEnv(20)
	g := grantState(1000)
	a := &Call{Plugin: "p", Owner: "a", Grant: g}
	b := &Call{Plugin: "p", Owner: "b", Grant: g}
	if code, _ := e.call(t, a, "set", StateSetRequest{Key: "k", Value: strings.Repeat("v", 15)}); code != OK {
		t.Fatal(code)
	}
	if code, resp := e.call(t, b, "set", StateSetRequest{Key: "k", Value: "12345"}); code != TooLarge || !strings.Contains(resp["message"].(string), "full") {
		t.Errorf("store full: %v %v", code, resp)
	}
	e.call(t, a, "delete", StateKeyRequest{Key: "k"})
	if code, _ := e.call(t, b, "set", StateSetRequest{Key: "k", Value: "12345"}); code != OK {
		t.Errorf("after freeing: %v", code)
	}
}

func TestStateDefaultLimit(t *testing.T) {
	e := newStateEnv(0)
	c := &Call{Plugin: "p", Grant: grantState(0)}
	_, resp := e.call(t, c, "set", StateSetRequest{Key: "k", Value: "v"})
	if resp["max_bytes"] != float64(DefaultStateMaxBytes) {
		t.Errorf("max_bytes %v", resp["max_bytes"])
	}
}

func TestStateConcurrent(t *testing.T) {
	e := newStateEnv(0)
	g := grantState(1 << 20)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &Call{Plugin: "p", Owner: fmt.Sprint(i % 2), Grant: g}
			for j := range 100 {
				k := fmt.Sprintf("%d/%d", i, j)
				e.call(t, c, "set", StateSetRequest{Key: k, Value: "x"})
				if code, resp := e.call(t, c, "get", StateKeyRequest{Key: k}); code != OK || resp["value"] != "x" {
					t.Errorf("get %s: %v", k, resp)
				}
			}
		}()
	}
	wg.Wait()
	if u := e.store.Usage("p", "0") + e.store.Usage("p", "1"); u != int64(8*100*(len("0/00")+1)-8*10) {
		t.Errorf("usage %d", u)
	}
}
