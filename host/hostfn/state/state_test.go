package state

import (
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/hostfntest"
	"github.com/aiodhq/aiod/sdk/abi"

	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/store"
	"github.com/aiodhq/aiod/host/store/bolt"
)

func grantState(maxBytes int64) *caps.Grant {
	scope := &abi.StateScope{MaxBytes: maxBytes}
	p := &caps.Policy{Default: &abi.Capabilities{State: scope}}
	m := &abi.Manifest{Name: "t", Capabilities: abi.Capabilities{State: scope}}
	return p.Allow(m, caps.Env{})
}

type stateEnv struct {
	store store.Store
	defs  map[string]hostfn.Def
}

// usage is the size of (plugin, owner)'s space.
func (e *stateEnv) usage(t *testing.T, plugin, owner string) int64 {
	t.Helper()
	n, err := e.store.Usage(context.Background(), store.Space{Plugin: plugin, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// onStores runs f over the in-memory store and the bolt one.
func onStores(t *testing.T, storeMax int64, f func(t *testing.T, e *stateEnv)) {
	t.Run("memory", func(t *testing.T) {
		s := NewStore(storeMax)
		f(t, &stateEnv{store: s, defs: hostfntest.Defs(New(s))})
	})
	t.Run("bolt", func(t *testing.T) {
		s, err := bolt.Open(t.TempDir(), storeMax)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f(t, &stateEnv{store: s, defs: hostfntest.Defs(New(s))})
	})
}

func (e *stateEnv) call(t *testing.T, c *hostfn.Call, name string, req any) (abi.Code, map[string]any) {
	t.Helper()
	raw, ok := req.(string)
	if !ok {
		b, _ := json.Marshal(req)
		raw = string(b)
	}
	code, resp := hostfntest.Call(context.Background(), e.defs[name], c, []byte(raw))
	var m map[string]any
	if err := json.Unmarshal(resp, &m); err != nil {
		t.Fatalf("%s: response %q: %v", name, resp, err)
	}
	return code, m
}

func TestStateDefs(t *testing.T) {
	f := New(NewStore(0))
	var names []string
	for _, d := range f.Defs() {
		names = append(names, d.Name)
		if d.Module != "aiod:state" || len(d.Params) != 2 || len(d.Results) != 1 || d.Results[0] != hostfn.I64 {
			t.Errorf("%s: bad signature", d.Name)
		}
	}
	if f.Name() != abi.FamilyState || strings.Join(names, ",") != "get,set,delete,list" {
		t.Errorf("family %s functions %v", f.Name(), names)
	}
}

func TestState(t *testing.T) { onStores(t, 0, testState) }

func testState(t *testing.T, e *stateEnv) {
	g := grantState(100)
	alice := &hostfn.Call{Plugin: "p", Owner: "alice", Grant: g}
	bob := &hostfn.Call{Plugin: "p", Owner: "bob", Grant: g}
	other := &hostfn.Call{Plugin: "q", Owner: "alice", Grant: g}
	none := &hostfn.Call{Plugin: "p", Owner: "alice", Grant: (&caps.Policy{}).Allow(&abi.Manifest{Name: "p"}, caps.Env{})}
	steps := []struct {
		name string
		c    *hostfn.Call
		fn   string
		req  any
		code abi.Code
		want map[string]any
	}{
		{"get missing", alice, "get", abi.StateKeyRequest{Key: "a"}, abi.OK, map[string]any{"found": false, "value": ""}},
		{"set", alice, "set", abi.StateSetRequest{Key: "a/1", Value: "one"}, abi.OK, map[string]any{"bytes_used": 6.0, "max_bytes": 100.0}},
		{"get", alice, "get", abi.StateKeyRequest{Key: "a/1"}, abi.OK, map[string]any{"found": true, "value": "one"}},
		{"empty value is a value", alice, "set", abi.StateSetRequest{Key: "a/2"}, abi.OK, map[string]any{"bytes_used": 9.0}},
		{"get empty", alice, "get", abi.StateKeyRequest{Key: "a/2"}, abi.OK, map[string]any{"found": true, "value": ""}},
		{"overwrite counts once", alice, "set", abi.StateSetRequest{Key: "a/1", Value: "uno!"}, abi.OK, map[string]any{"bytes_used": 10.0}},
		{"set b", alice, "set", abi.StateSetRequest{Key: "b", Value: "bee"}, abi.OK, nil},
		{"list all", alice, "list", abi.StateListRequest{}, abi.OK, map[string]any{"keys": []any{"a/1", "a/2", "b"}, "truncated": false}},
		{"list prefix", alice, "list", abi.StateListRequest{Prefix: "a/"}, abi.OK, map[string]any{"keys": []any{"a/1", "a/2"}}},
		{"list page 1", alice, "list", abi.StateListRequest{Limit: 2}, abi.OK, map[string]any{"keys": []any{"a/1", "a/2"}, "truncated": true}},
		{"list page 2", alice, "list", abi.StateListRequest{Limit: 2, After: "a/2"}, abi.OK, map[string]any{"keys": []any{"b"}, "truncated": false}},
		{"other owner", bob, "get", abi.StateKeyRequest{Key: "a/1"}, abi.OK, map[string]any{"found": false}},
		{"other owner list", bob, "list", abi.StateListRequest{}, abi.OK, map[string]any{"keys": []any{}}},
		{"other plugin", other, "get", abi.StateKeyRequest{Key: "a/1"}, abi.OK, map[string]any{"found": false}},
		{"bob's own", bob, "set", abi.StateSetRequest{Key: "a/1", Value: "bob"}, abi.OK, map[string]any{"bytes_used": 6.0}},
		{"alice unchanged", alice, "get", abi.StateKeyRequest{Key: "a/1"}, abi.OK, map[string]any{"value": "uno!"}},
		{"too large", alice, "set", abi.StateSetRequest{Key: "big", Value: strings.Repeat("x", 90)}, abi.TooLarge, nil},
		{"failed set stored nothing", alice, "get", abi.StateKeyRequest{Key: "big"}, abi.OK, map[string]any{"found": false}},
		{"fills exactly", alice, "set", abi.StateSetRequest{Key: "big", Value: strings.Repeat("x", 100-14-3)}, abi.OK, map[string]any{"bytes_used": 100.0}},
		{"one more byte", alice, "set", abi.StateSetRequest{Key: "c", Value: ""}, abi.TooLarge, nil},
		{"shrinking is fine", alice, "set", abi.StateSetRequest{Key: "big", Value: "x"}, abi.OK, map[string]any{"bytes_used": 18.0}},
		{"delete", alice, "delete", abi.StateKeyRequest{Key: "big"}, abi.OK, map[string]any{"deleted": true}},
		{"delete again", alice, "delete", abi.StateKeyRequest{Key: "big"}, abi.OK, map[string]any{"deleted": false}},
		{"empty key", alice, "set", abi.StateSetRequest{Value: "x"}, abi.Invalid, nil},
		{"long key", alice, "get", abi.StateKeyRequest{Key: strings.Repeat("k", 1025)}, abi.Invalid, nil},
		{"bad limit", alice, "list", abi.StateListRequest{Limit: -1}, abi.Invalid, nil},
		{"unknown field", alice, "set", `{"key":"a","val":"x"}`, abi.Invalid, nil},
		{"no grant", none, "get", abi.StateKeyRequest{Key: "a"}, abi.Denied, nil},
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
	if u := e.usage(t, "p", "alice"); u != 14 {
		t.Errorf("usage %d", u)
	}
	if u := e.usage(t, "p", "bob"); u != 6 {
		t.Errorf("bob's usage %d", u)
	}
}

func TestStateStoreFull(t *testing.T) { onStores(t, 20, testStateStoreFull) }

func testStateStoreFull(t *testing.T, e *stateEnv) {
	g := grantState(1000)
	a := &hostfn.Call{Plugin: "p", Owner: "a", Grant: g}
	b := &hostfn.Call{Plugin: "p", Owner: "b", Grant: g}
	if code, _ := e.call(t, a, "set", abi.StateSetRequest{Key: "k", Value: strings.Repeat("v", 15)}); code != abi.OK {
		t.Fatal(code)
	}
	if code, resp := e.call(t, b, "set", abi.StateSetRequest{Key: "k", Value: "12345"}); code != abi.TooLarge || !strings.Contains(resp["message"].(string), "full") {
		t.Errorf("store full: %v %v", code, resp)
	}
	e.call(t, a, "delete", abi.StateKeyRequest{Key: "k"})
	if code, _ := e.call(t, b, "set", abi.StateSetRequest{Key: "k", Value: "12345"}); code != abi.OK {
		t.Errorf("after freeing: %v", code)
	}
}

func TestStateDefaultLimit(t *testing.T) { onStores(t, 0, testStateDefaultLimit) }

func testStateDefaultLimit(t *testing.T, e *stateEnv) {
	c := &hostfn.Call{Plugin: "p", Grant: grantState(0)}
	_, resp := e.call(t, c, "set", abi.StateSetRequest{Key: "k", Value: "v"})
	if resp["max_bytes"] != float64(abi.StateDefaultMaxBytes) {
		t.Errorf("max_bytes %v", resp["max_bytes"])
	}
}

func TestStateConcurrent(t *testing.T) { onStores(t, 0, testStateConcurrent) }

func testStateConcurrent(t *testing.T, e *stateEnv) {
	g := grantState(1 << 20)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &hostfn.Call{Plugin: "p", Owner: fmt.Sprint(i % 2), Grant: g}
			for j := range 100 {
				k := fmt.Sprintf("%d/%d", i, j)
				e.call(t, c, "set", abi.StateSetRequest{Key: k, Value: "x"})
				if code, resp := e.call(t, c, "get", abi.StateKeyRequest{Key: k}); code != abi.OK || resp["value"] != "x" {
					t.Errorf("get %s: %v", k, resp)
				}
			}
		}()
	}
	wg.Wait()
	if u := e.usage(t, "p", "0") + e.usage(t, "p", "1"); u != int64(8*100*(len("0/00")+1)-8*10) {
		t.Errorf("usage %d", u)
	}
}
