package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func init() {
	settings = append(settings,
		setting{"AIO_STATE_KEY_FILE", "/env/state.key", "/env/state.key", "/flag/state.key", "/flag/state.key", "", func(s *startFlags) any { return s.cfg.StateKeyFile }, ""},
		setting{"AIO_REPLICA_ID", "r1", "r1", "r2", "r2", "", func(s *startFlags) any { return s.cfg.ReplicaID }, ""},
	)
}

// TestReplicaRefusals: a state key file that is missing or does not parse,
// and a replica id that cannot tag a session id, refuse to start, saying
// why.
func TestReplicaRefusals(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("c2hvcnQ=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing state key file", []string{"--state-key-file", filepath.Join(dir, "none")}, "state key file: open " + filepath.Join(dir, "none")},
		{"short state key", []string{"--state-key-file", short}, "state key file " + short + ": line 1: a key of 5 bytes"},
		{"bad replica id", []string{"--replica-id", "r/1"}, `replica id "r/1"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"start", "--port", "0", "--cache-dir", "-", "--browser", "off"}, tc.args...)
			if code := run(args, &out, &errb); code != 1 || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q, want 1 and %q", code, errb.String(), tc.want)
			}
		})
	}
}

func TestDeployCommand(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		code int
		out  string // in stdout (code 0) or stderr
		file string // written into dir
	}{
		{"nginx", []string{"nginx", "--replica", "127.0.0.1:18101", "--replica", "127.0.0.1:18102", "--listen", "127.0.0.1:8080", "--out", dir},
			0, "--replica-id r2", "nginx.conf"},
		{"kubernetes", []string{"kubernetes", "--replicas", "3", "--image", "aiod:1", "--out", dir}, 0, "kubectl apply -f " + dir, "router.yaml"},
		{"no subcommand", nil, 2, "usage:", ""},
		{"unknown target", []string{"swarm"}, 2, "usage:", ""},
		{"no out", []string{"nginx", "--replica", "127.0.0.1:1"}, 2, "--out DIR is required", ""},
		{"no replica", []string{"nginx", "--out", dir}, 1, "no replica", ""},
		{"bad flag", []string{"kubernetes", "--replicas", "x", "--out", dir}, 2, "invalid value", ""},
		{"no image", []string{"kubernetes", "--out", dir}, 1, "--image", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"deploy"}, tc.args...), &out, &errb)
			got := errb.String()
			if tc.code == 0 {
				got = out.String()
			}
			if code != tc.code || !strings.Contains(got, tc.out) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d and %q", code, out.String(), errb.String(), tc.code, tc.out)
			}
			if tc.file != "" {
				if _, err := os.Stat(filepath.Join(dir, tc.file)); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
