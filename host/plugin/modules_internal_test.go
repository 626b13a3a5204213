package plugin

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/runtime"
)

// fakeCompiled is a runtime.Compiled that only records its Close.
type fakeCompiled struct {
	runtime.Compiled
	name   string
	closed *[]string
}

func (f *fakeCompiled) Close(context.Context) error {
	*f.closed = append(*f.closed, f.name)
	return nil
}

// TestModulesKeep: a compiled module is shared while plugins hold it;
// once none does it is kept for reuse, one per plugin name (the last
// released displaces the one kept before); a module no plugin loaded with
// is not kept and displaces nothing; prune closes the kept modules of
// plugins gone from the catalogue; close keeps nothing.
func TestModulesKeep(t *testing.T) {
	type step struct {
		op   string // add, get, release, fail (release unchecked), prune, close
		key  string // a/1: plugin a, version 1
		want string // after the step: the modules closed so far, and "inUse/kept"
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"shared, then kept", []step{
			{"add", "a/1", "- 1/0"},
			{"get", "a/1", "- 1/0"},
			{"release", "a/1", "- 1/0"},
			{"release", "a/1", "- 0/1"},
			{"get", "a/1", "- 1/0"},
		}},
		{"one kept per plugin", []step{
			{"add", "a/1", "- 1/0"},
			{"add", "a/2", "- 2/0"},
			{"add", "b/1", "- 3/0"},
			{"release", "a/1", "- 2/1"},
			{"release", "b/1", "- 1/2"},
			{"add", "a/3", "- 2/2"},
			{"release", "a/2", "a/1 1/2"},
			{"release", "a/3", "a/1,a/2 0/2"},
		}},
		{"refused module not kept", []step{
			{"add", "a/1", "- 1/0"},
			{"release", "a/1", "- 0/1"},
			{"add", "a/2", "- 1/1"},
			{"fail", "a/2", "a/2 0/1"},
			{"get", "a/1", "a/2 1/0"},
		}},
		{"prune and close", []step{
			{"add", "a/1", "- 1/0"},
			{"add", "b/1", "- 2/0"},
			{"release", "a/1", "- 1/1"},
			{"release", "b/1", "- 0/2"},
			{"prune", "b", "a/1 0/1"},
			{"add", "c/1", "a/1 1/1"},
			{"close", "", "a/1,b/1 1/0"},
			{"release", "c/1", "a/1,b/1,c/1 0/0"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s modules
			var closed []string
			held := map[string]*module{}
			for i, st := range tc.steps {
				name, _, _ := strings.Cut(st.key, "/")
				switch st.op {
				case "add":
					held[st.key] = s.add(st.key, name, &fakeCompiled{name: st.key, closed: &closed})
					held[st.key].checked(st.key)
				case "get":
					if m := s.get(st.key); m != held[st.key] || m == nil {
						t.Fatalf("step %d: get %s = %v, want the module added", i, st.key, m)
					}
				case "release":
					held[st.key].release()
				case "fail":
					s.mu.Lock()
					held[st.key].loaded = false
					s.mu.Unlock()
					held[st.key].release()
				case "prune":
					s.prune(map[string]bool{st.key: true})
				case "close":
					s.close()
				}
				in, kept := s.held()
				got := slices.Clone(closed)
				sort.Strings(got)
				gs := "-"
				if len(got) > 0 {
					gs = strings.Join(got, ",")
				}
				if g := fmt.Sprintf("%s %d/%d", gs, in, kept); g != st.want {
					t.Fatalf("step %d (%s %s): %s, want %s", i, st.op, st.key, g, st.want)
				}
			}
		})
	}
}

// TestModulesAddRace: two loads of the same module at once share the
// first one added; the second compiled copy is closed.
func TestModulesAddRace(t *testing.T) {
	var s modules
	var closed []string
	a := s.add("a/1", "a", &fakeCompiled{name: "first", closed: &closed})
	b := s.add("a/1", "a", &fakeCompiled{name: "second", closed: &closed})
	if a != b || !slices.Equal(closed, []string{"second"}) {
		t.Fatalf("second add: same module %v, closed %v", a == b, closed)
	}
	if in, kept := s.held(); in != 1 || kept != 0 || a.refs != 2 {
		t.Fatalf("held %d/%d refs %d, want 1/0 refs 2", in, kept, a.refs)
	}
}
