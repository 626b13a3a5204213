package doctor_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/doctor"
)

// cgroupRoot makes a cgroup v2 look-alike with the given controllers,
// holding this process's own group directory.
func cgroupRoot(t *testing.T, controllers string) string {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte(controllers+"\n"), 0o644)
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		if p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "0::"); ok {
			os.MkdirAll(filepath.Join(root, p), 0o755)
		}
	}
	return root
}

func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestProbe(t *testing.T) {
	cdp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/json/version" {
			w.Write([]byte(`{"Browser":"Chrome/1"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer cdp.Close()
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer worker.Close()
	cdpAddr := strings.TrimPrefix(cdp.URL, "http://")
	have := func(names ...string) func(string) (string, error) {
		return func(n string) (string, error) {
			for _, h := range names {
				if h == n {
					return "/nonexistent/bin/" + n, nil
				}
			}
			return "", errors.New("not found")
		}
	}
	type want struct{ status, missing string }
	for _, tc := range []struct {
		name string
		o    doctor.Options
		want map[string]want
		warn map[string]string // a warning the domain must carry
	}{
		{"everything", doctor.Options{LookPath: have("bash", "python3", "node", "chromium", "bwrap"),
			ComputerUseURL: worker.URL, CDP: cdpAddr, CgroupRoot: cgroupRoot(t, "cpu memory pids"), CacheDir: t.TempDir()},
			map[string]want{"files": {"ready", ""}, "exec": {"ready", ""}, "code_interpreter": {"ready", ""}, "browser": {"ready", ""}, "computer": {"ready", ""}}, nil},
		{"nothing", doctor.Options{LookPath: have(), CDP: closedAddr(t), CgroupRoot: t.TempDir(), Workspace: "/nonexistent/ws"},
			map[string]want{"files": {"absent", "workspace"}, "exec": {"absent", "bash"}, "code_interpreter": {"absent", "python3,node"},
				"browser": {"absent", "chromium,cdp"}, "computer": {"absent", "computer-use"}},
			map[string]string{"exec": "bubblewrap (bwrap) not found", "computer": "AIO_COMPUTER_USE_URL is not set", "browser": "no browser answers at http://"}},
		{"partial", doctor.Options{LookPath: have("bash", "chromium"), JupyterEndpoint: "http://127.0.0.1:8888", ComputerUseURL: "http://" + closedAddr(t),
			CDP: closedAddr(t), CgroupRoot: cgroupRoot(t, "cpu")},
			map[string]want{"files": {"ready", ""}, "exec": {"degraded", ""}, "code_interpreter": {"degraded", "node"}, "browser": {"degraded", "cdp"}, "computer": {"absent", "computer-use"}},
			map[string]string{"exec": "without the pids and memory controllers", "computer": "computer-use worker probe failed", "browser": "can be launched"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := doctor.Probe(context.Background(), tc.o)
			if len(r.Domains) != len(doctor.Domains) {
				t.Fatalf("%d domains, want %d", len(r.Domains), len(doctor.Domains))
			}
			for name, w := range tc.want {
				d := r.Domains[name]
				if d.Status != w.status || strings.Join(d.Missing, ",") != w.missing {
					t.Errorf("%s: %s missing %q, want %s missing %q (warnings %q)", name, d.Status, d.Missing, w.status, w.missing, d.Warnings)
				}
				if d.Missing == nil || d.Warnings == nil {
					t.Errorf("%s: missing and warnings must be lists, not null", name)
				}
			}
			for name, w := range tc.warn {
				if !strings.Contains(strings.Join(r.Domains[name].Warnings, "|"), w) {
					t.Errorf("%s warnings %q lack %q", name, r.Domains[name].Warnings, w)
				}
			}
		})
	}
	r := doctor.Probe(context.Background(), doctor.Options{LookPath: have("python3", "node"), CDP: closedAddr(t)})
	if got := r.Domains["code_interpreter"].Map()["kinds"]; !reflect.DeepEqual(got, []string{"python", "javascript"}) {
		t.Errorf("kinds %v", got)
	}
	if c := r.Check("compile_cache"); c.OK {
		t.Errorf("no cache dir reported ok: %+v", c)
	}
}

// TestDoctorCache: a report is served for the TTL; refresh probes again.
func TestDoctorCache(t *testing.T) {
	var probes atomic.Int32
	d := doctor.New(doctor.Options{LookPath: func(n string) (string, error) {
		if n == "bash" {
			probes.Add(1)
		}
		return "", errors.New("no")
	}, CDP: closedAddr(t)}, time.Hour)
	ctx := context.Background()
	a := d.Report(ctx, false)
	b := d.Report(ctx, false)
	if probes.Load() != 1 || !a.At.Equal(b.At) {
		t.Fatalf("cached: %d probes", probes.Load())
	}
	d.Report(ctx, true)
	if probes.Load() != 2 {
		t.Fatalf("refresh: %d probes, want 2", probes.Load())
	}
}

// TestLockdownCheck: the lockdown check is there only when asked for, and
// names each piece a locked-down start would miss of what doctor sees.
func TestLockdownCheck(t *testing.T) {
	none := func(string) (string, error) { return "", errors.New("not found") }
	r := doctor.Probe(context.Background(), doctor.Options{LookPath: none, CDP: closedAddr(t), CgroupRoot: t.TempDir()})
	if c := r.Check("lockdown"); c.Detail != "" || c.OK || len(r.Checks) != 8 {
		t.Errorf("without Lockdown: %d checks, lockdown %+v", len(r.Checks), c)
	}
	r = doctor.Probe(context.Background(), doctor.Options{LookPath: none, CDP: closedAddr(t), CgroupRoot: t.TempDir(), Lockdown: &doctor.Lockdown{}})
	c := r.Check("lockdown")
	want := []string{doctor.LockdownNoBwrap, doctor.LockdownNoCgroups + "no cgroup v2 hierarchy at ", doctor.LockdownNoDataDir, doctor.LockdownNoAuditLog}
	if c.OK || len(c.Missing) != len(want) {
		t.Fatalf("nothing: %+v", c)
	}
	for i, w := range want {
		if !strings.HasPrefix(c.Missing[i], w) {
			t.Errorf("missing[%d] = %q, want %q", i, c.Missing[i], w)
		}
	}
	bwrap := func(n string) (string, error) {
		if n == "bwrap" {
			return "/nonexistent/bin/bwrap", nil
		}
		return "", errors.New("not found")
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	c = doctor.Probe(context.Background(), doctor.Options{LookPath: bwrap, CDP: closedAddr(t), CgroupRoot: cgroupRoot(t, "cpu memory pids"),
		Lockdown: &doctor.Lockdown{DataDir: t.TempDir(), AuditLog: audit}}).Check("lockdown")
	if !c.OK || len(c.Missing) != 0 || !strings.Contains(c.Detail, audit) {
		t.Errorf("everything: %+v", c)
	}
}

// TestFromEnv: the environment's names become the options, and the
// DevTools address keeps its defaults for a part not set.
func TestFromEnv(t *testing.T) {
	env := map[string]string{"BROWSER_REMOTE_DEBUGGING_PORT": "9333", "AIO_BROWSER_PATH": "/opt/chrome",
		"AIO_JUPYTER_ENDPOINT": "http://127.0.0.1:8888", "AIO_COMPUTER_USE_URL": "http://127.0.0.1:7000"}
	o := doctor.FromEnv(func(k string) string { return env[k] })
	if o.CDP != "127.0.0.1:9333" || o.Chromium != "/opt/chrome" || o.JupyterEndpoint != env["AIO_JUPYTER_ENDPOINT"] || o.ComputerUseURL != env["AIO_COMPUTER_USE_URL"] {
		t.Errorf("FromEnv: %+v", o)
	}
	if o := doctor.FromEnv(func(string) string { return "" }); o.CDP != "127.0.0.1:9222" || o.Chromium != "" || o.JupyterEndpoint != "" || o.ComputerUseURL != "" {
		t.Errorf("FromEnv of an empty environment: %+v", o)
	}
}

// TestProbesFollowNoRedirect: a DevTools endpoint or a computer-use worker
// that answers with a redirect is reported by its status; the target is
// never asked.
func TestProbesFollowNoRedirect(t *testing.T) {
	var reached atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Write([]byte(`{"Browser":"x"}`))
	}))
	defer target.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+r.URL.Path, code)
		}))
		r := doctor.Probe(context.Background(), doctor.Options{LookPath: func(string) (string, error) { return "", errors.New("not found") },
			CDP: strings.TrimPrefix(redirect.URL, "http://"), ComputerUseURL: redirect.URL, CgroupRoot: t.TempDir()})
		redirect.Close()
		if c := r.Check("cdp"); c.OK || !strings.Contains(c.Detail, "answered "+strconv.Itoa(code)) {
			t.Errorf("%d: cdp check %+v", code, c)
		}
		if d := r.Domains["computer"]; d.Status == "ready" || !strings.Contains(strings.Join(d.Warnings, "|"), "answered "+strconv.Itoa(code)) {
			t.Errorf("%d: computer %+v", code, d)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect's target was asked %d times", n)
	}
}
