package oauth

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"golang.org/x/oauth2"
)

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	raw := make([]byte, KeySize)
	for i := range raw {
		raw[i] = byte(i)
	}
	write := func(name string, b []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	if k, err := LoadKey(write("raw", raw, 0o600)); err != nil || string(k) != string(raw) {
		t.Fatalf("raw key: %v", err)
	}
	if k, err := LoadKey(write("hex", []byte(hex.EncodeToString(raw)+"\n"), 0o400)); err != nil || string(k) != string(raw) {
		t.Fatalf("hex key: %v", err)
	}
	for _, tc := range []struct {
		path, want string
	}{
		{write("open", raw, 0o644), "must be 0600"},
		{write("group", raw, 0o640), "must be 0600"},
		{write("short", raw[:16], 0o600), "want 32 bytes or 64 hex digits"},
		{write("badhex", []byte(strings.Repeat("zz", 32)), 0o600), "want 32 bytes or 64 hex digits"},
		{dir, "not a regular file"},
		{filepath.Join(dir, "missing"), "no such file"},
		{"", "--upstream-key-file"},
	} {
		if _, err := LoadKey(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.path, err, tc.want)
		}
	}
}

func TestStoreSealed(t *testing.T) {
	dir := t.TempDir()
	key := make([]byte, KeySize)
	s, err := NewStore(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	st := &State{Resource: "https://r.example/mcp", ClientID: "c", Token: &oauth2.Token{AccessToken: "secret-access", RefreshToken: "secret-refresh"}}
	if err := s.Save("a", st); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load("a")
	if err != nil || got.Token.RefreshToken != "secret-refresh" {
		t.Fatalf("load: %+v %v", got, err)
	}
	if got, err := s.Load("nobody"); got != nil || err != nil {
		t.Fatalf("no file: %v %v", got, err)
	}
	// Another key does not open it.
	other := make([]byte, KeySize)
	other[0] = 1
	s2, _ := NewStore(dir, other)
	if _, err := s2.Load("a"); err == nil || !strings.Contains(err.Error(), "does not open with the key file") {
		t.Fatalf("another key: %v", err)
	}
	// A file copied to another server's name does not open.
	b, _ := os.ReadFile(s.path("a"))
	os.WriteFile(s.path("b"), b, 0o600)
	if _, err := s.Load("b"); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Fatalf("copied file: %v", err)
	}
	// A flipped byte does not open; a truncated file is refused.
	b[len(b)-1] ^= 1
	os.WriteFile(s.path("a"), b, 0o600)
	if _, err := s.Load("a"); err == nil {
		t.Fatal("a tampered file opened")
	}
	os.WriteFile(s.path("a"), b[:5], 0o600)
	if _, err := s.Load("a"); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("truncated: %v", err)
	}
}

// aiod refuses to use an authorization code server without a key, and
// a server that was never logged in is not offered: its calls say how to
// log in, without a request reaching it.
func TestNotLoggedIn(t *testing.T) {
	e := caps.UpstreamServer{Name: "x", URL: "http://127.0.0.1:1/mcp", OAuth: &caps.UpstreamOAuth{}}
	if _, err := New(e, nil, Options{}); err == nil || !strings.Contains(err.Error(), "--upstream-key-file") {
		t.Fatalf("no store: %v", err)
	}
	a, err := New(e, nil, Options{Store: newStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	reached := false
	rt := a.Wrap(roundTripFunc(func(*http.Request) (*http.Response, error) { reached = true; return nil, nil }))
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, e.URL, strings.NewReader("{}"))
	_, err = rt.RoundTrip(req)
	if err == nil || !strings.Contains(err.Error(), "not logged in") || !strings.Contains(err.Error(), "aiod upstream login x") || reached {
		t.Fatalf("not logged in: %v (reached %v)", err, reached)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestCheckEndpoint(t *testing.T) {
	for _, ok := range []string{"https://as.example/token", "http://127.0.0.1:8080/x", "http://[::1]/x", "http://localhost/x"} {
		if err := CheckEndpoint(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://as.example/token", "http://127.0.0.2/x", "javascript:alert(1)", "https://u:p@as.example/", "ftp://as.example/", "//as.example/x", "https:///x"} {
		if err := CheckEndpoint(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestPastedRedirect(t *testing.T) {
	c := newCallback("http://127.0.0.1:4567/callback")
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:4567/callback?code=c&state=s&iss=i", ""},
		{"http://127.0.0.1:4568/callback?code=c&state=s", "is not the redirect URL"},
		{"https://127.0.0.1:4567/callback?code=c&state=s", "is not the redirect URL"},
		{"http://evil.example:4567/callback?code=c&state=s", "is not the redirect URL"},
		{"http://127.0.0.1:4567/other?code=c&state=s", "is not the redirect URL"},
		{"http://127.0.0.1:4567/callback?error=access_denied&error_description=no", "refused: access_denied (no)"},
		{"http://127.0.0.1:4567/callback?state=s", "no code"},
		{"http://127.0.0.1:4567/callback?code=a&code=b&state=s", "twice"},
		{"%zz", "not a URL"},
	} {
		r := c.pasted(tc.in)
		if tc.want == "" {
			if r.err != nil || r.res.Code != "c" || r.res.State != "s" || r.res.Iss != "i" {
				t.Errorf("%s: %+v %v", tc.in, r.res, r.err)
			}
			continue
		}
		if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.in, r.err, tc.want)
		}
	}
	_ = url.Values{}
}
