package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stdioPolicy writes a policy file whose "upstreams" are servers.
func stdioPolicy(t *testing.T, servers map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"upstreams": servers})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStdioUpstreams: @modelcontextprotocol/server-filesystem and
// server-memory (npm) as command servers of the policy, each in its jail:
// aiod publishes their tools under their prefixes and forwards calls; the
// filesystem server, allowed "/", sees only the jail (its /workspace is
// <data-dir>/upstreams/fs/workspace; the repository and the host's /tmp
// are not there); the memory server keeps its graph in its own /workspace,
// through the one variable the policy passes it.
func TestStdioUpstreams(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "upstream servers do not depend on the engine")
	nodeBin := nodeTools(t)
	tools := filepath.Clean(filepath.Join(nodeBin, "..", "..", ".."))
	node := filepath.Join(nodeBin, "node")
	pkg := func(name string) string {
		return filepath.Join(tools, "node_modules", "@modelcontextprotocol", name, "dist", "index.js")
	}
	data := t.TempDir()
	hostFile := filepath.Join(t.TempDir(), "host-only.txt")
	if err := os.WriteFile(hostFile, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	policy := stdioPolicy(t, map[string]any{
		"fs":  map[string]any{"command": node, "args": []string{pkg("server-filesystem"), "/"}, "prefix": "fs", "read_only": []string{tools}},
		"mem": map[string]any{"command": node, "args": []string{pkg("server-memory")}, "prefix": "mem", "read_only": []string{tools}, "env": []string{"MEMORY_FILE_PATH"}},
	})
	a := start(t, []string{"MEMORY_FILE_PATH=/workspace/memory.jsonl"}, "--policy", policy, "--data-dir", data, "--upstream-list-timeout", "30s")
	names := toolsList(t, a.URL)
	for _, want := range []string{"fs_write_file", "fs_read_text_file", "fs_list_directory", "mem_create_entities", "mem_read_graph"} {
		if !slices.Contains(names, want) {
			t.Fatalf("no %s in %v\n%s", want, names, a.Logs())
		}
	}
	// the TypeScript v2 client sees them in both eras
	for _, era := range []string{"modern", "legacy"} {
		res := runNode(t, nil, clientScript("ts-v2.mjs"), a.URL, era)
		got := fmt.Sprint(res["tools"])
		if !strings.Contains(got, "fs_read_text_file") || !strings.Contains(got, "mem_read_graph") {
			t.Fatalf("ts-v2 %s: tools %s", era, got)
		}
	}
	if text, isErr := callTool(t, a.URL, "fs_write_file", `{"path":"/workspace/hello.txt","content":"hello from the jail"}`); isErr {
		t.Fatalf("write_file: %s", text)
	}
	if b, err := os.ReadFile(filepath.Join(data, "upstreams", "fs", "workspace", "hello.txt")); err != nil || string(b) != "hello from the jail" {
		t.Fatalf("the file is not in the server's directory: %v %q", err, b)
	}
	if text, isErr := callTool(t, a.URL, "fs_read_text_file", `{"path":"/workspace/hello.txt"}`); isErr || !strings.Contains(text, "hello from the jail") {
		t.Fatalf("read_text_file: %v %s", isErr, text)
	}
	for _, outside := range []string{hostFile, filepath.Join(repoRoot(), "go.mod"), "/etc/shadow"} {
		if text, isErr := callTool(t, a.URL, "fs_read_text_file", `{"path":"`+outside+`"}`); !isErr || strings.Contains(text, "host secret") || strings.Contains(text, "module ") {
			t.Fatalf("read %s from the jail: %v %s", outside, isErr, text)
		}
	}
	text, _ := callTool(t, a.URL, "fs_list_directory", `{"path":"/"}`)
	if strings.Contains(text, "[DIR] home") || strings.Contains(text, "[DIR] root") || !strings.Contains(text, "[DIR] workspace") {
		t.Fatalf("the jail's /: %s", text)
	}
	if text, isErr := callTool(t, a.URL, "mem_create_entities", `{"entities":[{"name":"aiod","entityType":"project","observations":["runs stdio servers in a jail"]}]}`); isErr {
		t.Fatalf("create_entities: %s", text)
	}
	if text, isErr := callTool(t, a.URL, "mem_read_graph", `{}`); isErr || !strings.Contains(text, "runs stdio servers in a jail") {
		t.Fatalf("read_graph: %v %s", isErr, text)
	}
	if b, err := os.ReadFile(filepath.Join(data, "upstreams", "mem", "workspace", "memory.jsonl")); err != nil || !strings.Contains(string(b), "aiod") {
		t.Fatalf("the memory file: %v %q", err, b)
	}
}

// stdioServerBinary builds the upstream tests' Go stdio server into a
// directory outside /tmp (the jail shows its own /tmp).
func stdioServerBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "aiod-e2e-stdio-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "stdioserver")
	cmd := exec.Command("go", "build", "-o", bin, "./host/upstream/testdata/stdioserver")
	cmd.Dir = repoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// withMarker lists the processes whose command line holds marker.
func withMarker(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitGone(t *testing.T, marker string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if len(withMarker(marker)) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("processes left behind: %v", withMarker(marker))
}

// TestStdioNoOrphans: a command server that started a child of its own
// leaves nothing running when aiod stops (SIGINT: the server's stdin is
// closed, then it is signalled) nor when aiod is killed outright (SIGKILL:
// bubblewrap takes the server and its children with it).
func TestStdioNoOrphans(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "upstream servers do not depend on the engine")
	bin := stdioServerBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			marker := "aiod-orphan-marker-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(int(sig))
			policy := stdioPolicy(t, map[string]any{
				"kid": map[string]any{"command": bin, "prefix": "kid", "read_only": []string{filepath.Dir(bin)}},
			})
			a := start(t, nil, "--policy", policy, "--data-dir", t.TempDir(), "--upstream-list-timeout", "30s")
			if text, isErr := callTool(t, a.URL, "kid_spawn", `{"text":"`+marker+`"}`); isErr || text != "spawned" {
				t.Fatalf("spawn: %v %s\n%s", isErr, text, a.Logs())
			}
			if len(withMarker(marker)) == 0 {
				t.Fatal("the child is not running")
			}
			if err := a.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { _, _ = a.cmd.Process.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("aiod did not stop")
			}
			waitGone(t, marker, 10*time.Second)
		})
	}
}
