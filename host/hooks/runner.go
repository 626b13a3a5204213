package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/proc"
)

// ScratchDir is where a command hook starts in its sandbox: its tenant's
// own writable directory, kept across the hook's runs while the host
// runs.
const ScratchDir = "/hook"

// Runner bounds.
const (
	// MaxOutputBytes caps each of a hook's output streams; more is read
	// and dropped.
	MaxOutputBytes = 256 << 10
	// maxProcs and maxMemory bound one hook run (its process tree).
	maxProcs  = 64
	maxMemory = 512 << 20
)

// Runner runs operator command hooks in the process sandbox (host/proc
// with bubblewrap): the machine's programs read-only, the hook's own
// program read-only at its path, a writable scratch directory of the
// tenant's at /hook, no network, an unprivileged uid without
// capabilities, its own process and memory limits, and its deadline. A
// machine without bubblewrap runs no hook: each run fails (and a
// before-tool hook then blocks).
type Runner struct {
	log     *slog.Logger
	dir     string // holds the tenants' scratch directories
	ownsDir bool
	once    sync.Once
	m       *proc.Manager
	mu      sync.Mutex
	closed  bool
}

// NewRunner makes a runner whose scratch directories are under dir (one
// per tenant); "" makes a private temporary directory, removed by Close.
// Nothing starts until the first run.
func NewRunner(dir string, log *slog.Logger) (*Runner, error) {
	if log == nil {
		log = slog.Default()
	}
	r := &Runner{log: log, dir: dir}
	if dir == "" {
		d, err := os.MkdirTemp("", "aiod-hooks-")
		if err != nil {
			return nil, fmt.Errorf("hooks scratch directory: %w", err)
		}
		r.dir, r.ownsDir = d, true
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("hooks scratch directory: %w", err)
	}
	return r, nil
}

func (r *Runner) manager() (*proc.Manager, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("hook runner closed")
	}
	r.once.Do(func() {
		r.m = proc.New(proc.Config{
			BaseEnv: proc.SafeBaseEnv(os.Environ()), Logger: r.log,
			DefaultTimeout: caps.DefaultHookTimeout, MaxTimeout: caps.MaxHookTimeout,
			DefaultMaxOutput: MaxOutputBytes, MaxOutputLimit: MaxOutputBytes,
			MaxProcs: maxProcs, MaxMemory: maxMemory, MaxSessions: 1, MaxSessionsPerOwner: 1,
			Sandbox: &proc.Sandbox{Dirs: r.scratch},
		})
	})
	return r.m, nil
}

// scratch is the sandbox directory of a tenant: <dir>/<tenant> at /hook,
// the daemon's own (the sandbox's user namespace maps the daemon's uid to
// the sandbox's). Tenant names are caps.TenantNamePattern (no separator,
// no dot first).
func (r *Runner) scratch(tenant string) ([]proc.Mount, error) {
	if !caps.ValidTenantName(tenant) {
		return nil, fmt.Errorf("tenant %q: not a tenant name", tenant)
	}
	d := filepath.Join(r.dir, tenant)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, err
	}
	return []proc.Mount{{Host: d, Path: ScratchDir}}, nil
}

// Output is how one hook run ended.
type Output struct {
	// Exit is the exit status; -1 when it did not exit by itself
	// (Killed or Signal says why).
	Exit   int
	Signal string
	Killed string
	Stdout []byte
	Stderr []byte
}

// Ending describes how the run ended, for a log line or a reason.
func (o *Output) Ending() string {
	switch {
	case o.Killed == "timeout":
		return "out of time"
	case o.Killed != "":
		return "killed (" + o.Killed + ")"
	case o.Signal != "":
		return "killed by " + o.Signal
	}
	return "exit status " + strconv.Itoa(o.Exit)
}

// Run runs hook h for event ev: ev as JSON on its standard input,
// AIO_HOOK_EVENT, AIO_HOOK_TOOL and AIO_TENANT (and AIO_SESSION in a
// session) in its environment. An error means it did not run: its
// program is not there or is writable by others than its owner, the
// sandbox could not be made, or ctx ended.
func (r *Runner) Run(ctx context.Context, h caps.Hook, ev *Event) (*Output, error) {
	if len(h.Command) == 0 {
		return nil, errors.New("not a command hook")
	}
	if err := CheckProgram(h.Command[0]); err != nil {
		return nil, err
	}
	in, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("event: %w", err)
	}
	m, err := r.manager()
	if err != nil {
		return nil, err
	}
	env := proc.SandboxEnv(m.Config().BaseEnv, ScratchDir)
	env = append(env, "AIO_HOOK_EVENT="+ev.Event, "AIO_HOOK_TOOL="+ev.Tool, "AIO_TENANT="+ev.Tenant)
	if ev.Session != "" {
		env = append(env, "AIO_SESSION="+ev.Session)
	}
	res, err := m.Spawn(ctx, proc.SpawnRequest{
		Path: h.Command[0], Args: h.Command, Env: env, Stdin: in,
		Timeout: h.Timeout(), MaxOutput: MaxOutputBytes, Owner: ev.Tenant,
		ReadOnly: []string{h.Command[0]},
	})
	if err != nil {
		return nil, err
	}
	if res.Killed == "canceled" && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return &Output{Exit: res.ExitCode, Signal: res.Signal, Killed: res.Killed, Stdout: res.Stdout, Stderr: res.Stderr}, nil
}

// Close stops the runner's process manager (killing hooks still
// running) and removes its private scratch directory. Idempotent.
func (r *Runner) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	m := r.m
	r.mu.Unlock()
	var err error
	if m != nil {
		err = m.Close()
	}
	if r.ownsDir {
		err = errors.Join(err, os.RemoveAll(r.dir))
	}
	return err
}

// CheckProgram refuses a hook program that is not a regular file, or that
// anyone but its owner may change (group or other write permission).
func CheckProgram(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("hook program %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("hook program %s: not a regular file", path)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("hook program %s is writable by others than its owner (mode %04o): refused (chmod go-w)", path, fi.Mode().Perm())
	}
	return nil
}

// CheckPolicyFile refuses a policy file that names command hooks when
// anyone but its owner may change it (seed: a hooks file anyone but its
// owner may change is refused), and a hook program CheckProgram refuses.
// A policy without command hooks passes whatever its mode.
func CheckPolicyFile(path string, p *caps.Policy) error {
	if !p.HasCommandHooks() {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("it names hook commands and is writable by others than its owner (mode %04o): refused (chmod go-w)", fi.Mode().Perm())
	}
	lists := [][]caps.Hook{p.Hooks}
	for _, t := range p.Tenants {
		lists = append(lists, t.Hooks)
	}
	for _, hs := range lists {
		for _, h := range hs {
			if len(h.Command) > 0 {
				if err := CheckProgram(h.Command[0]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
