// Package machinetools is the host's part of Machine Mode tools
// (spec/machine-mode.md): the registrations of --machine-tools and of the
// policy's machine_tools become the configuration of the built-in
// machine_tools plugin (plugins/machine), a configured plugin (ABI v1.1)
// that publishes one tool per command. Here: the registrations merged (the
// policy's entry wins a name), the named environment variables resolved
// from aiod's own environment, the programs checked against their pins
// (required in lockdown), the plugin's grant narrowed to the registered
// programs, and in lockdown the programs shown in the sandbox.
package machinetools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Plugin is the plugin that publishes Machine Mode tools.
const Plugin = "machine_tools"

// Tools is the host's state of the Machine Mode tools.
type Tools struct {
	flag     map[string]caps.MachineTool
	lockdown bool
	log      *slog.Logger
	lookup   func(string) (string, bool) // aiod's environment
	// paths are the host paths lockdown's sandbox shows read-only for
	// the registered tools (the programs and the absolute paths among
	// their fixed arguments)
	paths atomic.Pointer[[]string]
}

// New returns the state of the registrations flag (--machine-tools);
// lookup reads aiod's environment.
func New(flag map[string]caps.MachineTool, lockdown bool, log *slog.Logger, lookup func(string) (string, bool)) *Tools {
	return &Tools{flag: flag, lockdown: lockdown, log: log, lookup: lookup}
}

// Setup is what the registrations make at one load or reload.
type Setup struct {
	// config is the plugin's configuration (nil: no tool to publish)
	config json.RawMessage
	// programs are the registered programs, the plugin's whole process
	// grant
	programs []string
}

// machineConfig is the plugin's configuration (plugins/machine Config).
type machineConfig struct {
	Tools   map[string]machineCLI `json:"tools"`
	Refused []abi.Refusal         `json:"refused,omitempty"`
}

type machineCLI struct {
	Command        []string          `json:"command"`
	Prefix         string            `json:"prefix,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	TimeoutMs      int64             `json:"timeout_ms,omitempty"`
	MaxOutputBytes int64             `json:"max_output_bytes,omitempty"`
}

// Setup makes the configuration of the registrations of the flag and of
// policy p. A registration whose program is missing, is not a regular
// executable file, or does not match its pin (or has none in lockdown) is
// refused with the reason; the others are published.
func (mt *Tools) Setup(p *caps.Policy) Setup {
	all := maps.Clone(mt.flag)
	if all == nil {
		all = map[string]caps.MachineTool{}
	}
	if p != nil {
		for name, t := range p.MachineTools {
			if _, both := all[name]; both {
				mt.log.Warn("machine tool registered by --machine-tools and by the policy: the policy's entry applies", "name", name)
			}
			all[name] = t
		}
	}
	if len(all) == 0 {
		mt.paths.Store(&[]string{})
		return Setup{}
	}
	cfg := machineConfig{Tools: map[string]machineCLI{}}
	var programs, paths []string
	names := slices.Sorted(maps.Keys(all))
	prefixes := map[string]string{}
	for _, name := range names {
		t := all[name]
		if err := mt.check(t); err != nil {
			mt.log.Warn("machine tool refused", "name", name, "err", err)
			cfg.Refused = append(cfg.Refused, abi.Refusal{Name: name, Reason: err.Error()})
			continue
		}
		prefix := t.Prefix
		if prefix == "" {
			prefix = name
		}
		if other, ok := prefixes[prefix]; ok {
			// the flag's and the policy's are each checked, not together
			err := fmt.Sprintf("prefix %q is %s's already", prefix, other)
			cfg.Refused = append(cfg.Refused, abi.Refusal{Name: name, Reason: err})
			continue
		}
		prefixes[prefix] = name
		c := machineCLI{Command: t.Command, Prefix: t.Prefix, TimeoutMs: t.TimeoutMs, MaxOutputBytes: t.MaxOutputBytes}
		for _, e := range t.Env {
			if v, ok := mt.lookup(e); ok {
				if c.Env == nil {
					c.Env = map[string]string{}
				}
				c.Env[e] = v
			}
		}
		cfg.Tools[name] = c
		if !slices.Contains(programs, t.Command[0]) {
			programs = append(programs, t.Command[0])
		}
		for _, a := range t.Command {
			if filepath.IsAbs(a) {
				if _, err := os.Stat(a); err == nil && !slices.Contains(paths, a) {
					paths = append(paths, a)
				}
			}
		}
	}
	sort.Strings(paths)
	mt.paths.Store(&paths)
	if len(cfg.Tools) == 0 {
		return Setup{} // nothing to publish: the refusals are logged
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		mt.log.Error("machine tools configuration", "err", err)
		return Setup{}
	}
	return Setup{config: b, programs: programs}
}

// check checks a registration's program: a regular executable file that
// matches its pin; in lockdown a pin is required.
func (mt *Tools) check(t caps.MachineTool) error {
	prog := t.Command[0]
	if mt.lockdown && t.SHA256 == "" {
		return fmt.Errorf("%s: lockdown requires a sha256 pin of the program", prog)
	}
	f, err := os.Open(prog)
	if err != nil {
		return fmt.Errorf("program %s: %v", prog, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("program %s is not an executable file", prog)
	}
	if t.SHA256 == "" {
		return nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("program %s: %v", prog, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != t.SHA256 {
		return fmt.Errorf("program %s has sha256 %s, not the pinned %s", prog, got, t.SHA256)
	}
	return nil
}

// SandboxPaths are the paths lockdown's sandbox shows read-only for the
// registered tools.
func (mt *Tools) SandboxPaths() []string {
	if p := mt.paths.Load(); p != nil {
		return *p
	}
	return nil
}

// Configurations are the registry's configurations of configured plugins.
func (s Setup) Configurations() map[string]json.RawMessage {
	return map[string]json.RawMessage{Plugin: s.config}
}

// WithPolicy is the built-ins' policy bp with the machine_tools
// plugin's process grant narrowed to the registered programs (in the
// sandbox's working directories, no shell), unless the operator's policy
// names the plugin itself.
func WithPolicy(bp *caps.Policy, s Setup) *caps.Policy {
	if _, own := bp.Plugins[Plugin]; own || len(s.programs) == 0 {
		return bp
	}
	np := *bp
	np.Plugins = maps.Clone(bp.Plugins)
	if np.Plugins == nil {
		np.Plugins = map[string]abi.Capabilities{}
	}
	np.Plugins[Plugin] = abi.Capabilities{Process: &abi.ProcessScope{Commands: slices.Clone(s.programs), Cwd: []string{"$SANDBOX"}}}
	return &np
}
