// Package doctor probes what this machine offers each plane of the host:
// a shell, interpreters, a browser, process isolation and limits, the
// compile cache, and a desktop worker. The same probes answer `aiod
// doctor` and the per-domain part of GET /v1/capabilities and GET
// /v2/sandbox (spec/capabilities.md), so they agree.
package doctor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aiodhq/aiod/host/proc"
)

// The statuses of a domain.
const (
	Ready    = "ready"
	Degraded = "degraded"
	Absent   = "absent"
)

// The domains, in report order.
var Domains = []string{"files", "exec", "code_interpreter", "browser", "computer"}

// Options say where to look. Zero values are the defaults in each field.
type Options struct {
	// LookPath finds a program (exec.LookPath).
	LookPath func(string) (string, error)
	// CacheDir is the compiled-module cache directory ("" none, "-" off).
	CacheDir string
	// Workspace, when set, must be a directory.
	Workspace string
	// CDP is the DevTools host:port probed with GET /json/version
	// (default 127.0.0.1:9222).
	CDP string
	// Chromium is the browser binary looked up first (then chromium,
	// chromium-browser, google-chrome).
	Chromium string
	// JupyterEndpoint, when set, is a Jupyter server that serves Python
	// when no python3 is installed.
	JupyterEndpoint string
	// ComputerUseURL, when set, is the computer-use worker probed (aiod
	// has no desktop plane of its own).
	ComputerUseURL string
	// CgroupRoot is the cgroup v2 mount (default /sys/fs/cgroup).
	CgroupRoot string
	// Cgroups, when set, replaces the cgroup probe: the host passes how
	// its process manager contains what it runs (host/proc Containment).
	Cgroups func() Check
	// Timeout bounds each network probe and version query (default 2s).
	Timeout time.Duration
	// Lockdown, when set, adds the lockdown check: what a locked-down
	// start (aiod start --lockdown) with this configuration would miss.
	Lockdown *Lockdown
}

// Lockdown is the configuration of a locked-down start that the lockdown
// check judges (spec/lockdown.md §1).
type Lockdown struct {
	// DataDir is --data-dir, where the tenants' directories live.
	DataDir string
	// AuditLog is --audit-log, the file of one line per request.
	AuditLog string
}

// What the lockdown check finds missing: the data directory and the
// audit log in aiod start's words (host/lockdown; cmd/aiod's
// TestDoctorLockdown compares them), the sandbox and the cgroups with the
// start's prefixes and the probe's finding.
const (
	LockdownNoDataDir  = "give --data-dir (AIO_DATA_DIR): the tenants' directories live there"
	LockdownNoAuditLog = "an audit log: set --audit-log FILE (AIO_AUDIT_LOG); lockdown refuses a call it cannot audit"
	LockdownNoBwrap    = "the bubblewrap sandbox (Debian package bubblewrap): bwrap not found on PATH"
	LockdownNoCgroups  = "cgroups for process limits: "
)

// FromEnv is the options the environment names, as aiod reads it: the
// DevTools address (BROWSER_REMOTE_DEBUGGING_HOST and _PORT), the browser
// binary (AIO_BROWSER_PATH), a Jupyter server (AIO_JUPYTER_ENDPOINT) and a
// computer-use worker (AIO_COMPUTER_USE_URL). getenv is os.Getenv or a
// stand-in.
func FromEnv(getenv func(string) string) Options {
	h, p := getenv("BROWSER_REMOTE_DEBUGGING_HOST"), getenv("BROWSER_REMOTE_DEBUGGING_PORT")
	if h == "" {
		h = "127.0.0.1"
	}
	if p == "" {
		p = "9222"
	}
	return Options{CDP: net.JoinHostPort(h, p), Chromium: getenv("AIO_BROWSER_PATH"),
		JupyterEndpoint: getenv("AIO_JUPYTER_ENDPOINT"), ComputerUseURL: getenv("AIO_COMPUTER_USE_URL")}
}

func (o *Options) defaults() {
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.CDP == "" {
		o.CDP = "127.0.0.1:9222"
	}
	if o.CgroupRoot == "" {
		o.CgroupRoot = "/sys/fs/cgroup"
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
}

// Check is one probe's finding.
type Check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Detail is what was found (a path, a version) or why not.
	Detail string `json:"detail"`
	// Missing, of the lockdown check, is each piece a locked-down start
	// would be refused for, in aiod start's words.
	Missing []string `json:"missing,omitempty"`
}

// Domain is one plane's status, in aiod's shape: status, missing,
// warnings, and fields of its own.
type Domain struct {
	Status   string   `json:"status"`
	Missing  []string `json:"missing"`
	Warnings []string `json:"warnings"`
	// Extra holds the domain's own fields (files: one flag per
	// operation; code_interpreter: kinds; computer: its flags).
	Extra map[string]any `json:"-"`
}

// Map renders the domain as its JSON object.
func (d Domain) Map() map[string]any {
	m := map[string]any{"status": d.Status, "missing": d.Missing, "warnings": d.Warnings}
	for k, v := range d.Extra {
		m[k] = v
	}
	return m
}

// Report is one run of the probes.
type Report struct {
	Checks  []Check           `json:"checks"`
	Domains map[string]Domain `json:"-"`
	At      time.Time         `json:"at"`
}

// DomainsMap renders the domains as JSON objects by name.
func (r Report) DomainsMap() map[string]any {
	out := make(map[string]any, len(r.Domains))
	for k, d := range r.Domains {
		out[k] = d.Map()
	}
	return out
}

// Check returns the named check (zero if absent).
func (r Report) Check(name string) Check {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return Check{Name: name}
}

// Probe runs every probe once.
func Probe(ctx context.Context, o Options) Report {
	o.defaults()
	r := Report{At: time.Now().UTC(), Domains: map[string]Domain{}}
	find := func(name string, names ...string) Check {
		for _, n := range names {
			if n == "" {
				continue
			}
			if p, err := o.LookPath(n); err == nil {
				return Check{Name: name, OK: true, Detail: p}
			}
		}
		return Check{Name: name, Detail: "not found on PATH: " + strings.Join(nonEmpty(names), ", ")}
	}
	withVersion := func(c Check) Check {
		if c.OK {
			vctx, cancel := context.WithTimeout(ctx, o.Timeout)
			defer cancel()
			if out, err := exec.CommandContext(vctx, c.Detail, "--version").CombinedOutput(); err == nil {
				c.Detail += " (" + strings.TrimSpace(firstLine(string(out))) + ")"
			}
		}
		return c
	}
	bash := find("bash", "bash")
	py := withVersion(find("python3", "python3"))
	if !py.OK {
		if ep := o.JupyterEndpoint; ep != "" {
			py = Check{Name: "python3", OK: true, Detail: "AIO_JUPYTER_ENDPOINT " + ep}
		}
	}
	node := withVersion(find("node", "node"))
	chromium := find("chromium", o.Chromium, "chromium", "chromium-browser", "google-chrome")
	bwrap := find("bubblewrap", "bwrap")
	var cg Check
	if o.Cgroups != nil {
		cg = o.Cgroups()
		cg.Name = "cgroups"
	} else {
		cg = probeCgroups(o.CgroupRoot)
	}
	cache := probeCache(o.CacheDir)
	cdp := probeCDP(ctx, o.CDP, o.Timeout)
	r.Checks = []Check{bash, py, node, chromium, bwrap, cg, cache, cdp}
	if o.Lockdown != nil {
		r.Checks = append(r.Checks, checkLockdown(*o.Lockdown, bwrap, cg))
	}

	// files: the host's own (pure Go), so ready unless the workspace is
	// not usable
	files := Domain{Status: Ready, Missing: []string{}, Warnings: []string{}, Extra: map[string]any{}}
	for _, op := range []string{"read", "write", "replace", "search", "find", "list", "grep", "glob", "edit"} {
		files.Extra[op] = true
	}
	if o.Workspace != "" {
		if st, err := os.Stat(o.Workspace); err != nil || !st.IsDir() {
			files.Status, files.Missing = Absent, []string{"workspace"}
			files.Warnings = append(files.Warnings, "workspace "+o.Workspace+" is not a directory")
			for op := range files.Extra {
				files.Extra[op] = false
			}
		}
	}
	r.Domains["files"] = files

	ex := Domain{Status: Ready, Missing: []string{}, Warnings: []string{}}
	if !bash.OK {
		ex.Status, ex.Missing = Absent, []string{"bash"}
	}
	if !cg.OK {
		ex.Warnings = append(ex.Warnings, "no cgroup for the programs it runs ("+cg.Detail+"): process limits are enforced by a watchdog, not by the kernel")
		if ex.Status == Ready {
			ex.Status = Degraded
		}
	}
	if !bwrap.OK {
		ex.Warnings = append(ex.Warnings, "bubblewrap (bwrap) not found: commands cannot be isolated in their own namespaces")
	}
	r.Domains["exec"] = ex

	ci := Domain{Missing: []string{}, Warnings: []string{}}
	kinds := []string{}
	if py.OK {
		kinds = append(kinds, "python")
	} else {
		ci.Missing = append(ci.Missing, "python3")
	}
	if node.OK {
		kinds = append(kinds, "javascript")
	} else {
		ci.Missing = append(ci.Missing, "node")
	}
	switch len(kinds) {
	case 2:
		ci.Status = Ready
	case 1:
		ci.Status = Degraded
	default:
		ci.Status = Absent
	}
	ci.Extra = map[string]any{"kinds": kinds}
	r.Domains["code_interpreter"] = ci

	br := Domain{Status: Ready, Missing: []string{}, Warnings: []string{}, Extra: map[string]any{"cdp": o.CDP}}
	switch {
	case cdp.OK:
	case chromium.OK:
		br.Status, br.Missing = Degraded, []string{"cdp"}
		br.Warnings = append(br.Warnings, cdp.Detail+"; "+chromium.Detail+" can be launched (--browser launch)")
	default:
		br.Status, br.Missing = Absent, []string{"chromium", "cdp"}
		br.Warnings = append(br.Warnings, cdp.Detail)
	}
	r.Domains["browser"] = br

	r.Domains["computer"] = probeComputer(ctx, o)
	return r
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// probeCgroups: a cgroup v2 hierarchy whose controllers include pids and
// memory, writable by this user (so the host can make groups for the
// programs it runs).
func probeCgroups(root string) Check {
	c := Check{Name: "cgroups"}
	b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		c.Detail = "no cgroup v2 hierarchy at " + root
		return c
	}
	ctl := strings.Fields(string(b))
	have := func(n string) bool {
		for _, x := range ctl {
			if x == n {
				return true
			}
		}
		return false
	}
	if !have("pids") || !have("memory") {
		c.Detail = "cgroup v2 at " + root + " without the pids and memory controllers (" + strings.Join(ctl, " ") + ")"
		return c
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	dir := root
	if p, ok := strings.CutPrefix(strings.TrimSpace(string(self)), "0::"); ok {
		dir = filepath.Join(root, p)
	}
	if !writable(dir) {
		c.Detail = "cgroup v2 at " + root + ", but " + dir + " is not writable by this user"
		return c
	}
	c.OK, c.Detail = true, "cgroup v2 at "+root+" ("+strings.Join(ctl, " ")+")"
	return c
}

// checkLockdown: what aiod start --lockdown would refuse of what the
// probes and the configuration show (the sandbox's trial run,
// authentication and plugin pins are the start's own checks).
func checkLockdown(l Lockdown, bwrap, cg Check) Check {
	c := Check{Name: "lockdown"}
	if !bwrap.OK {
		c.Missing = append(c.Missing, LockdownNoBwrap)
	}
	if !cg.OK {
		c.Missing = append(c.Missing, LockdownNoCgroups+cg.Detail)
	}
	if l.DataDir == "" {
		c.Missing = append(c.Missing, LockdownNoDataDir)
	}
	if l.AuditLog == "" {
		c.Missing = append(c.Missing, LockdownNoAuditLog)
	} else if err := appendable(l.AuditLog); err != nil {
		c.Missing = append(c.Missing, "audit log: "+err.Error())
	}
	if len(c.Missing) > 0 {
		c.Detail = "aiod start --lockdown would refuse to start"
		return c
	}
	c.OK, c.Detail = true, "bubblewrap, cgroups, data dir "+l.DataDir+", audit log "+l.AuditLog
	return c
}

// appendable: the audit log can be opened for appending, as aiod start
// opens it (made if missing, so its directory must take a new file).
func appendable(file string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		return f.Close()
	}
	if !os.IsNotExist(err) {
		return err
	}
	dir := filepath.Dir(file)
	if st, err := os.Stat(dir); err != nil {
		return err
	} else if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if !writable(dir) {
		return fmt.Errorf("%s does not exist and %s is not writable by this user", file, dir)
	}
	return nil
}

// probeCache: the compile cache directory exists (or can be made) and is
// writable.
func probeCache(dir string) Check {
	c := Check{Name: "compile_cache"}
	switch dir {
	case "-":
		c.Detail = "disabled (--cache-dir -): every start compiles every module"
		return c
	case "":
		c.Detail = "no cache directory: modules are compiled on every start"
		return c
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.Detail = err.Error()
		return c
	}
	f, err := os.CreateTemp(dir, ".doctor-")
	if err != nil {
		c.Detail = dir + " is not writable: " + err.Error()
		return c
	}
	f.Close()
	os.Remove(f.Name())
	n := 0
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	c.OK, c.Detail = true, dir+" ("+strconv.Itoa(n)+" files)"
	return c
}

// probes is the HTTP client of the probes: it never follows a redirect
// (a probe answered 3xx reports that status), so a probed address cannot
// send the doctor to another host.
var probes = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// probeCDP asks the DevTools endpoint for its version.
func probeCDP(ctx context.Context, addr string, timeout time.Duration) Check {
	c := Check{Name: "cdp"}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/json/version", nil)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	resp, err := probes.Do(req)
	if err != nil {
		c.Detail = "no browser answers at http://" + addr + "/json/version"
		return c
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Detail = fmt.Sprintf("http://%s/json/version answered %d", addr, resp.StatusCode)
		return c
	}
	c.OK, c.Detail = true, "http://"+addr
	return c
}

// probeComputer: aiod has no desktop plane of its own; a computer-use
// worker at AIO_COMPUTER_USE_URL is probed, as aiod does.
func probeComputer(ctx context.Context, o Options) Domain {
	d := Domain{Status: Absent, Missing: []string{"computer-use"}, Warnings: []string{}, Extra: map[string]any{
		"provider": nil, "display": nil, "screenshot": false, "actions": false, "clipboard": false,
		"recording": false, "accessibility": false, "accessibility_backend": nil,
		"resolution": map[string]any{"width": nil, "height": nil}}}
	u := o.ComputerUseURL
	if u == "" {
		d.Warnings = append(d.Warnings, "no computer-use worker: AIO_COMPUTER_USE_URL is not set (aiod has no desktop plane)")
		return d
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	url := strings.TrimRight(u, "/") + "/capabilities"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = probes.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				d.Status, d.Missing, d.Extra["provider"] = Ready, []string{}, u
				return d
			}
			err = fmt.Errorf("answered %d", resp.StatusCode)
		}
	}
	d.Warnings = append(d.Warnings, "computer-use worker probe failed: "+url+": "+err.Error())
	return d
}

// DefaultTTL is how long a Doctor's report is served before probing again.
const DefaultTTL = 5 * time.Second

// Doctor serves probe reports, cached for TTL. Safe for concurrent use.
type Doctor struct {
	opts Options
	ttl  time.Duration
	mu   sync.Mutex
	last *Report
}

// New returns a Doctor probing with o, caching for ttl (DefaultTTL if 0).
func New(o Options, ttl time.Duration) *Doctor {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Doctor{opts: o, ttl: ttl}
}

// Report returns the cached report, probing again when it is older than
// the TTL or refresh is set. Concurrent callers share one probe.
func (d *Doctor) Report(ctx context.Context, refresh bool) Report {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last != nil && !refresh && time.Since(d.last.At) < d.ttl {
		return *d.last
	}
	r := Probe(ctx, d.opts)
	d.last = &r
	return r
}

// ContainmentCheck is the cgroups check of a process manager's
// containment.
func ContainmentCheck(c proc.Containment) Check {
	ck := Check{Name: "cgroups", OK: c.Mode != proc.ModeWatchdog, Detail: c.Mode}
	if c.Reason != "" {
		ck.Detail += ": " + c.Reason
	}
	return ck
}
