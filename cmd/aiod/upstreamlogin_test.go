package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/upstream/oauth/oauthtest"
)

// lockedBuf is the command's stdout, read while it runs.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// `aiod upstream login NAME --no-browser` against oidc-provider: the URL
// printed, the redirect pasted on stdin, the tokens kept sealed under
// --data-dir; `logout` revokes them; a key file others may read, a server
// the policy does not name, or one without "oauth" are refused.
func TestUpstreamLoginCommand(t *testing.T) {
	m := oauthtest.StartMCP(t)
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	os.WriteFile(policy, []byte(`{"upstreams": {"prot": {"url": "`+m.URL+`", "prefix": "prot", "oauth": {}},
	  "plain": {"url": "`+m.URL+`"}}}`), 0o600)
	key := filepath.Join(dir, "key")
	os.WriteFile(key, []byte(strings.Repeat("ab", 32)), 0o600)
	data := filepath.Join(dir, "data")
	flags := []string{"--policy", policy, "--data-dir", data, "--upstream-key-file", key}

	pr, pw := io.Pipe()
	var out lockedBuf
	var errb strings.Builder
	code := make(chan int, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	go func() {
		code <- upstreamLoginCmd(append([]string{"login", "prot", "--no-browser", "--callback-port", strconv.Itoa(port), "--scope", "mcp:admin"}, flags...), pr, &out, &errb)
	}()
	var authURL string
	for i := 0; i < 400 && authURL == ""; i++ {
		for _, l := range strings.Split(out.String(), "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, m.Issuer) {
				authURL = l
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if authURL == "" {
		t.Fatalf("no URL printed: %s %s", out.String(), errb.String())
	}
	if !strings.Contains(authURL, "redirect_uri=http%3A%2F%2F127.0.0.1%3A"+strconv.Itoa(port)+"%2Fcallback") || !strings.Contains(authURL, "mcp%3Aadmin") {
		t.Fatalf("the URL has not the callback port %d or the scope asked: %s", port, authURL)
	}
	u, err := oauthtest.Browser(t, authURL)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(pw, u.String()+"\n")
	if c := <-code; c != 0 {
		t.Fatalf("login: exit %d: %s %s", c, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "prot: logged in at "+m.Issuer) || !strings.Contains(out.String(), "dynamic") || !strings.Contains(out.String(), "mcp:admin") {
		t.Fatalf("login said: %s", out.String())
	}
	if _, err := os.Stat(filepath.Join(data, "upstream-oauth", "prot.json.sealed")); err != nil {
		t.Fatal(err)
	}

	var lo strings.Builder
	if c := upstreamLoginCmd(append([]string{"logout", "prot"}, flags...), nil, &lo, &errb); c != 0 || !strings.Contains(lo.String(), "revoked: refresh_token") {
		t.Fatalf("logout: %d %s %s", c, lo.String(), errb.String())
	}
	lo.Reset()
	if c := upstreamLoginCmd(append([]string{"logout", "prot"}, flags...), nil, &lo, &errb); c != 0 || !strings.Contains(lo.String(), "not logged in") {
		t.Fatalf("second logout: %d %s", c, lo.String())
	}

	os.Chmod(key, 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"logout", "prot"}, flags...), "must be 0600"},
		{append([]string{"login", "nosuch"}, flags...), `has no server "nosuch"`},
		{append([]string{"login", "plain"}, flags...), `has no "oauth"`},
	} {
		var e strings.Builder
		if c := upstreamLoginCmd(tc.args, nil, io.Discard, &e); c != 1 || !strings.Contains(e.String(), tc.want) {
			t.Errorf("%v: exit %d, %s (want %q)", tc.args, c, e.String(), tc.want)
		}
	}
	var e strings.Builder
	if c := upstreamLoginCmd([]string{"login"}, nil, io.Discard, &e); c != 2 || !strings.Contains(e.String(), "usage") {
		t.Errorf("no name: %d %s", c, e.String())
	}
}
