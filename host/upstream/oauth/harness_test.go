package oauth

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/upstream"
	"github.com/aiodhq/aiod/host/upstream/oauth/oauthtest"
)

// entry is the policy entry of the test server.
func entry(m *oauthtest.MCPServer, o *caps.UpstreamOAuth) caps.UpstreamServer {
	return caps.UpstreamServer{Name: "prot", URL: m.URL, Prefix: "prot", OAuth: o}
}

func newStore(t *testing.T) *Store {
	t.Helper()
	key := make([]byte, KeySize)
	for i := range key {
		key[i] = byte(i * 7)
	}
	s, err := NewStore(t.TempDir(), key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// login logs in with the browser played by the test.
func login(t *testing.T, m *oauthtest.MCPServer, e caps.UpstreamServer, s *Store, edit func(*url.URL)) (*State, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	return Login(ctx, LoginOptions{Server: e, Store: s, Out: &out, Lookup: func(string) (string, bool) { return "", false },
		Open: func(authURL string) error {
			u, err := oauthtest.Browser(t, authURL)
			if err != nil {
				t.Errorf("browser: %v", err)
				return err
			}
			if edit != nil {
				edit(u)
			}
			return oauthtest.Visit(u)
		}})
}

// aiodSet is aiod's upstream set over the server with the Auth hook.
func aiodSet(t *testing.T, m *oauthtest.MCPServer, e caps.UpstreamServer, o Options) (*upstream.Set, *Auth) {
	t.Helper()
	a, err := New(e, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	set := upstream.New([]upstream.Server{{Name: e.Name, URL: e.URL, Prefix: e.Prefix, FromPolicy: true, Auth: a.Wrap}},
		upstream.Options{ListTimeout: 10 * time.Second, DefaultTTL: time.Millisecond})
	t.Cleanup(func() { set.Close() })
	return set, a
}

func toolNames(set *upstream.Set) []string {
	var out []string
	for _, tl := range set.Tools(context.Background()) {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

// callText calls tool and returns the result's first text and isError.
func callText(t *testing.T, set *upstream.Set, tool string) (string, bool) {
	t.Helper()
	res, err := set.Call(context.Background(), tool, json.RawMessage(`{"text":"hi"}`), nil)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("call %s: %s", tool, res)
	}
	return r.Content[0].Text, r.IsError
}

// syncBuf is a writer the test reads while Login writes.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// waitLine waits for a line holding prefix and returns its trimmed text.
func (s *syncBuf) waitLine(t *testing.T, prefix string) string {
	t.Helper()
	for i := 0; i < 600; i++ {
		s.mu.Lock()
		text := s.b.String()
		s.mu.Unlock()
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix) {
				return l
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no line starting %s in %q", prefix, s.b.String())
	return ""
}
