package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stateKeyLine is a key file line of 32 bytes of b.
func stateKeyLine(b byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32))
}

// TestStateKeysAcrossReplicas: a requestState sealed by one server opens
// on another that read the same key file, and on one whose file was
// rotated (the new key first, the previous one kept); a server without
// the sealing key refuses it.
func TestStateKeysAcrossReplicas(t *testing.T) {
	a, b, c := stateKeyLine('a'), stateKeyLine('b'), stateKeyLine('c')
	tests := []struct {
		name       string
		seal, open string // key files; "" is no file (a random key of the process)
		opens      bool
	}{
		{"same file", a, a, true},
		{"same file, two keys", a + "\n" + b, a + "\n" + b, true},
		{"rotated: the previous key still opens", a, "# rotated\n" + c + "\n" + a + "\n", true},
		{"rotated sealer, replica not yet told the new key", c + "\n" + a, a, false},
		{"another key", a, b, false},
		{"previous key dropped", a, c, false},
		{"no file on the sealer", "", a, false},
		{"no file on either: two random keys", "", "", false},
	}
	digest := paramsDigest("echo", []byte(`{"text":"x"}`))
	bind := stateBinding("alice", "tools/call", digest)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sealer, opener := replica(t, tt.seal), replica(t, tt.open)
			tok, err := sealer.sealer.seal(&requestState{Round: 2, Answers: map[string]json.RawMessage{"k": json.RawMessage(`"v"`)}}, bind)
			if err != nil {
				t.Fatal(err)
			}
			st, err := opener.sealer.open(tok, bind)
			if tt.opens != (err == nil) {
				t.Fatalf("open on the other replica: %v, want opens=%v", err, tt.opens)
			}
			if tt.opens && (st.Round != 2 || string(st.Answers["k"]) != `"v"`) {
				t.Fatalf("opened %+v", st)
			}
			// the sealer always opens its own state
			if _, err := sealer.sealer.open(tok, bind); err != nil {
				t.Fatalf("the sealer does not open its own state: %v", err)
			}
		})
	}
}

// replica is a Server whose state keys are those of the key file text
// (none: its own random key).
func replica(t *testing.T, file string) *Server {
	t.Helper()
	s := NewServer(nil, Options{})
	t.Cleanup(s.Close)
	if file != "" {
		keys, err := ParseStateKeys([]byte(file))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetStateKeys(keys); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestStateKeysReplaced: SetStateKeys (a reload) takes effect at once:
// states sealed under a key no longer listed stop opening, the new
// current key seals.
func TestStateKeysReplaced(t *testing.T) {
	bind := stateBinding("", "tools/call", paramsDigest("echo", nil))
	s := replica(t, stateKeyLine('a'))
	old, _ := s.sealer.seal(&requestState{Round: 1}, bind)
	keys, _ := ParseStateKeys([]byte(stateKeyLine('b') + "\n" + stateKeyLine('a')))
	if err := s.SetStateKeys(keys); err != nil {
		t.Fatal(err)
	}
	if _, err := s.sealer.open(old, bind); err != nil {
		t.Fatalf("after adding a key, a state under the previous one: %v", err)
	}
	fresh, _ := s.sealer.seal(&requestState{Round: 1}, bind)
	if _, err := replica(t, stateKeyLine('b')).sealer.open(fresh, bind); err != nil {
		t.Fatalf("a new state is not sealed with the new current key: %v", err)
	}
	keys, _ = ParseStateKeys([]byte(stateKeyLine('b')))
	if err := s.SetStateKeys(keys); err != nil {
		t.Fatal(err)
	}
	if _, err := s.sealer.open(old, bind); err == nil {
		t.Fatal("a state under a dropped key still opens")
	}
	if err := s.SetStateKeys(nil); err == nil {
		t.Fatal("SetStateKeys(nil) accepted")
	}
	if err := s.SetStateKeys([][]byte{[]byte("short")}); err == nil {
		t.Fatal("a 5-byte key accepted")
	}
}

func TestParseStateKeys(t *testing.T) {
	a, b := stateKeyLine('a'), stateKeyLine('b')
	url := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32))
	tests := []struct {
		name, file string
		keys       int    // keys parsed; 0: an error
		err        string // in the error
	}{
		{"one key", a + "\n", 1, ""},
		{"current and previous, comments, CRLF", "# aiod state keys\r\n" + a + "\r\n\r\n" + b + "\r\n", 2, ""},
		{"unpadded url-safe base64", url, 1, ""},
		{"empty", "", 0, "no key"},
		{"comments only", "# nothing\n\n", 0, "no key"},
		{"short key", base64.StdEncoding.EncodeToString([]byte("sixteen bytes!!!")), 0, "line 1: a key of 16 bytes"},
		{"not base64", a + "\nnot a key!\n", 0, "line 2: not base64"},
		{"too many", strings.Repeat(a+"\n", 9), 0, "9 keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := ParseStateKeys([]byte(tt.file))
			if tt.keys == 0 {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil || len(keys) != tt.keys {
				t.Fatalf("%d keys, %v; want %d", len(keys), err, tt.keys)
			}
		})
	}
}

func TestReadStateKeyFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	bad := filepath.Join(dir, "bad")
	os.WriteFile(good, []byte(stateKeyLine('a')+"\n"), 0o600)
	os.WriteFile(bad, []byte("hunter2\n"), 0o600)
	if keys, err := ReadStateKeyFile(good); err != nil || len(keys) != 1 {
		t.Fatalf("good file: %v", err)
	}
	for path, want := range map[string]string{bad: "state key file " + bad + ": line 1", filepath.Join(dir, "none"): "no such file"} {
		if _, err := ReadStateKeyFile(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", path, err, want)
		}
	}
}

// TestReplicaSessionIDs: with a replica id every session id starts with
// its tag and "." (what the load balancer routes on), and what follows is
// still 32 random bytes.
func TestReplicaSessionIDs(t *testing.T) {
	tests := []struct {
		id, tag string // tag "": refused
	}{
		{"r1", "r1"},
		{"aiod-7f9c_2", "aiod-7f9c_2"},
		{"10.244.1.7", "10-244-1-7"},
		{"fd00::1:7", "fd00--1-7"},
		{"", ""},
		{"r 1", ""},
		{"r1/x", ""},
		{strings.Repeat("x", 64), ""},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			tag, err := ReplicaTag(tt.id)
			if tt.tag == "" {
				if err == nil {
					t.Fatalf("replica id %q accepted as %q", tt.id, tag)
				}
				return
			}
			if err != nil || tag != tt.tag {
				t.Fatalf("tag %q, %v; want %q", tag, err, tt.tag)
			}
			s := NewServer(nil, Options{ReplicaID: tt.id})
			defer s.Close()
			seen := map[string]bool{}
			for range 3 {
				sess, err := s.sessions.create("", "2025-11-25", clientCaps{}, nil)
				if err != nil {
					t.Fatal(err)
				}
				rest, ok := strings.CutPrefix(sess.id, tt.tag+".")
				if raw, err := base64.RawURLEncoding.DecodeString(rest); !ok || err != nil || len(raw) != 32 || seen[rest] {
					t.Fatalf("session id %q: want %q, then 32 fresh random bytes", sess.id, tt.tag+".")
				}
				seen[rest] = true
			}
		})
	}
	s := NewServer(nil, Options{})
	defer s.Close()
	if sess, _ := s.sessions.create("", "2025-11-25", clientCaps{}, nil); strings.Contains(sess.id, ".") {
		t.Fatalf("without a replica id the session id %q has a tag", sess.id)
	}
}
