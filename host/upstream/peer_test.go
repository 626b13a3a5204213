package upstream

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// peerDir finds ../shared/peers/gosdk-echo beside the clone (a worktree may
// sit one level deeper). Under CI a missing peer fails the test.
func peerDir(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatal("no go.mod above the test")
		}
		root = parent
	}
	for _, d := range []string{filepath.Join(root, "..", "shared"), filepath.Join(root, "..", "..", "shared")} {
		p := filepath.Join(d, "peers", "gosdk-echo")
		if _, err := os.Stat(filepath.Join(p, "main.go")); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("the gosdk-echo peer is missing (want ../shared/peers/gosdk-echo beside the clone)")
	}
	t.Skip("the gosdk-echo peer is not beside this clone")
	return ""
}

// TestGoSDKEchoPeer: the go-sdk peer (JSON answers), stateless and with
// sessions, built from its source.
func TestGoSDKEchoPeer(t *testing.T) {
	dir := peerDir(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("go is needed to build the peer:", err)
	}
	bin := filepath.Join(t.TempDir(), "gosdk-echo")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the peer: %v\n%s", err, out)
	}
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			addr := freeAddr(t)
			args := []string{"-addr", addr}
			if !era.stateless {
				args = append(args, "-stateless=false")
			}
			cmd := exec.Command(bin, args...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			deadline := time.Now().Add(10 * time.Second)
			for {
				c, err := net.Dial("tcp", addr)
				if err == nil {
					c.Close()
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the peer did not start")
				}
				time.Sleep(20 * time.Millisecond)
			}
			s := newSet(t, Options{},
				Server{Name: "peer", URL: "http://" + addr + "/mcp", Prefix: "peer"},
				Server{Name: "gone", URL: deadURL(t), Prefix: "gone"})
			if got := names(s.Tools(context.Background())); !reflect.DeepEqual(got, []string{"peer_echo"}) {
				t.Fatalf("tools = %v", got)
			}
			if r := call(t, s, "peer_echo", `{"text":"hello"}`); r.IsError || r.text() != "hello" {
				t.Fatalf("peer_echo: %+v", r)
			}
			if r := call(t, s, "gone_hello", `{}`); !r.IsError {
				t.Fatalf("gone_hello: %+v", r)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
