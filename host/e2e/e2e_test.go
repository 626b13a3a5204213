// Package e2e drives a real bin/aiod (built by `make build plugins`) from
// the outside: the official MCP clients in both protocol eras, the HTTP
// hardening, and (with AIOD_E2E_CONFORMANCE=1, as `make conformance` sets
// it) the official conformance suites against one process.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
)

// repoRoot is the repository's top directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// binaries returns bin/aiod and build/plugins, skipping the test when they
// were not built.
func binaries(t *testing.T) (bin, plugins string) {
	t.Helper()
	skipShort(t)
	root := repoRoot()
	bin = filepath.Join(root, "bin", "aiod")
	plugins = filepath.Join(root, "build", "plugins")
	for _, p := range []string{bin, filepath.Join(plugins, "echo", "manifest.json"), filepath.Join(plugins, "conformance", "manifest.json")} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing: make test builds it first", p)
			}
			t.Skipf("%s is missing: run `make build plugins` first", p)
		}
	}
	return bin, plugins
}

// aiod is one running bin/aiod.
type aiod struct {
	URL  string // http://127.0.0.1:PORT/mcp
	Base string // http://127.0.0.1:PORT
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs strings.Builder
	wait time.Duration // startWaitOn its engine
}

// Logs returns everything the process wrote to stderr so far.
func (a *aiod) Logs() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.logs.String()
}

// skipShort skips every test of the package in -short (each starts with
// onEngines or defaultEngine, and binaries checks again).
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("drives bin/aiod from outside (real MCP clients, Node, Chromium, nginx, bubblewrap): make test runs it, make test-short does not")
	}
}

// startWait bounds a start on the engine of AIO_ENGINE in the test's
// environment (make conformance ENGINE=...), the default when unset.
func startWait() time.Duration { return startWaitOn(os.Getenv("AIO_ENGINE")) }

// startWaitOn bounds a start on engine: wasmtime compiles the nine modules
// on a cold cache in about 80 s on two cores (wazero: about 20 s), later
// starts load them from the cache.
func startWaitOn(engine string) time.Duration {
	if engine == "wasmtime" {
		return 240 * time.Second
	}
	return 60 * time.Second
}

// onEngines runs f as a subtest per engine of the engine table
// (runtimetest.Engines), the engines at once: the tests whose subject is
// the engine pass "--engine", engine to start. Every test of the package
// runs in parallel with the others (each starts its own bin/aiod on a free
// port, in its own directories): they wait on processes, clients and
// deadlines far more than they compute, and one at a time they took more
// than half of CI's race run.
func onEngines(t *testing.T, f func(t *testing.T, engine string)) {
	skipShort(t)
	runtimetest.OnEngines(t, func(t *testing.T, e *runtimetest.Engine) {
		t.Parallel()
		f(t, e.Name)
	})
}

// defaultEngine marks a test whose subject is not the engine: bin/aiod
// runs on the default engine (or AIO_ENGINE's) only, for the reason given.
func defaultEngine(t testing.TB, reason string) {
	t.Helper()
	skipShort(t)
	runtimetest.DefaultOnly(t, reason)
}

// argEngine is the engine args (or AIO_ENGINE) select.
func argEngine(args []string) string {
	engine := os.Getenv("AIO_ENGINE")
	for i, arg := range args {
		if arg == "--engine" && i+1 < len(args) {
			engine = args[i+1]
		} else if v, ok := strings.CutPrefix(arg, "--engine="); ok {
			engine = v
		}
	}
	return engine
}

// start runs bin/aiod on a free loopback port with the echo and
// conformance plugins, and stops it when the test ends.
func start(t *testing.T, env []string, args ...string) *aiod {
	t.Helper()
	_, plugins := binaries(t)
	return startArgv(t, env, append([]string{"start", "--host", "127.0.0.1", "--port", freePort(t), "--plugins-dir", plugins, "--cache-dir", e2eCache()}, args...))
}

// e2eCache is the compiled-module cache the tests' aiod processes share:
// build/cache/wazero, which make build and make plugins warmed (aiodpack)
// under the key bin/aiod uses too, so no test's aiod compiles a built-in
// or a build/plugins module cold.
func e2eCache() string { return filepath.Join(repoRoot(), "build", "cache", "wazero") }

// startArgv runs bin/aiod with exactly argv (and env besides the test's
// own environment), as start does.
func startArgv(t *testing.T, env []string, argv []string) *aiod {
	t.Helper()
	bin, _ := binaries(t)
	cmd := exec.Command(bin, argv...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &aiod{cmd: cmd, wait: startWaitOn(argEngine(argv))}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			a.mu.Lock()
			a.logs.WriteString(line + "\n")
			a.mu.Unlock()
			var l struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "aiod listening" {
				addr <- l.Addr
			}
		}
		close(addr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	select {
	case ad, ok := <-addr:
		if !ok {
			t.Fatalf("aiod exited before listening:\n%s", a.Logs())
		}
		a.Base = "http://" + ad
		a.URL = a.Base + "/mcp"
	case <-time.After(a.wait):
		t.Fatalf("aiod did not start listening within %s:\n%s", a.wait, a.Logs())
	}
	key := ""
	for i, arg := range argv {
		if arg == "--api-key" && i+1 < len(argv) {
			key = argv[i+1]
		} else if v, ok := strings.CutPrefix(arg, "--api-key="); ok {
			key = v
		}
	}
	for _, kv := range env {
		// AIOD_E2E_KEY names a key to wait with when the policy holds
		// the keys (tenants) and no --api-key is given.
		for _, name := range []string{"AIO_API_KEY=", "AIOD_E2E_KEY="} {
			if v, ok := strings.CutPrefix(kv, name); ok && key == "" {
				key = v
			}
		}
	}
	a.waitLoaded(t, key)
	return a
}

// waitLoaded waits until aiod has compiled every plugin it listed at
// start-up (it answers at once and compiles in the background), so that
// timings in the tests do not include compiling.
func (a *aiod) waitLoaded(t *testing.T, apiKey string) {
	t.Helper()
	deadline := time.Now().Add(a.wait)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("GET", a.Base+"/v1/capabilities", nil)
		if apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var c struct {
				Data struct {
					MCP struct {
						Loading []string `json:"loading"`
					} `json:"mcp"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&c)
			resp.Body.Close()
			if err == nil && c.Data.MCP.Loading != nil && len(c.Data.MCP.Loading) == 0 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("aiod did not finish loading its plugins within %s:\n%s", a.wait, a.Logs())
}

// freePort finds a loopback port nobody listens on.
func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// nodeTools installs the pinned Node tools once and returns Node 22's bin
// directory.
func nodeTools(t *testing.T) string { t.Helper(); return testplugins.NodeTools(t) }

// runNode runs a client script with Node 22 and returns its JSON line.
func runNode(t *testing.T, env []string, args ...string) map[string]any {
	t.Helper()
	bin := nodeTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	name := args[0]
	if strings.HasSuffix(name, ".mjs") {
		args = append([]string{filepath.Join(bin, "node")}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH")), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
	}
	var res map[string]any
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("%s: output is not one JSON line: %s", name, out)
	}
	return res
}

func clientScript(name string) string {
	return filepath.Join(repoRoot(), "host", "e2e", "testdata", "clients", name)
}

// post sends one JSON-RPC body with headers and returns the response.
func post(t *testing.T, url, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}
