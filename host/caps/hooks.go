package caps

import (
	"fmt"

	"github.com/aiodhq/aiod/sdk/abi"
	"path/filepath"
	"strings"
	"time"
)

// The hooks of a policy (spec/hooks.md): what runs around every tool call,
// in order. Pure data and validation; host/hooks runs them.

// Hook events of an operator command (spec/hooks.md §2).
const (
	HookBeforeTool = "before-tool"
	HookAfterTool  = "after-tool"
)

// Hook bounds.
const (
	// DefaultHookTimeout is a command hook's deadline when it names none.
	DefaultHookTimeout = 30 * time.Second
	// MaxHookTimeout is the most a hook may ask for.
	MaxHookTimeout = 10 * time.Minute
	// MaxHooks bounds the entries of one "hooks" list.
	MaxHooks = 64
	// maxHookArgs bounds a command's argv.
	maxHookArgs = 64
)

// Hook is one entry of a policy's "hooks" list (top level, or a tenant's,
// which runs after the top level's), for the calls of the tools its globs
// match: either an operator command run for one event (Event, Command),
// or a guard plugin switched on by name (Plugin), which runs before and
// after a call as its manifest declares.
type Hook struct {
	// Event is HookBeforeTool or HookAfterTool.
	Event string `json:"event,omitempty"`
	// Command is the program (an absolute path) and its arguments, run
	// without a shell.
	Command []string `json:"command,omitempty"`
	// Plugin names a guard plugin (its manifest declares hooks).
	Plugin string `json:"plugin,omitempty"`
	// FailOpen lets the call go on when the guard fails (traps, runs out
	// of time or memory, answers nonsense, is not loaded); the default
	// fails the call closed. Guard plugins only: a failing before-tool
	// command always blocks.
	FailOpen bool `json:"fail_open,omitempty"`
	// Config is given to the guard with every event (HookEvent.Config).
	Config map[string]string `json:"config,omitempty"`
	// Tools are globs ('*' matches any run of characters) over the
	// published tool names the hook is for. Absent or empty: every tool.
	Tools []string `json:"tools,omitempty"`
	// TimeoutMs is the hook's deadline; 0: DefaultHookTimeout.
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
}

// Timeout is the hook's deadline (DefaultHookTimeout when it names none).
func (h Hook) Timeout() time.Duration {
	if h.TimeoutMs <= 0 {
		return DefaultHookTimeout
	}
	return time.Duration(h.TimeoutMs) * time.Millisecond
}

// Matches reports whether the hook is for tool name: it has no globs, or
// one of them matches.
func (h Hook) Matches(name string) bool {
	if len(h.Tools) == 0 {
		return true
	}
	for _, g := range h.Tools {
		if matchPattern(g, name) {
			return true
		}
	}
	return false
}

// Label names the hook in logs and in what the model is shown: its event
// and its program's base name ("before-tool guard.sh").
func (h Hook) Label() string {
	if h.Plugin != "" {
		return "guard " + h.Plugin
	}
	prog := ""
	if len(h.Command) > 0 {
		prog = filepath.Base(h.Command[0])
	}
	return h.Event + " " + prog
}

// HasCommands reports whether hs has an operator command.
func HasCommands(hs []Hook) bool {
	for _, h := range hs {
		if len(h.Command) > 0 {
			return true
		}
	}
	return false
}

// ValidateHooks checks one "hooks" list. Errors name the entry.
func ValidateHooks(hs []Hook) error {
	if len(hs) > MaxHooks {
		return fmt.Errorf("hooks: %d entries, at most %d", len(hs), MaxHooks)
	}
	for i, h := range hs {
		if err := validateHook(h); err != nil {
			return fmt.Errorf("hooks[%d]: %w", i, err)
		}
	}
	return nil
}

func validateHook(h Hook) error {
	if err := validateHookGlobs(h.Tools); err != nil {
		return err
	}
	if h.Plugin != "" {
		if !nameRE.MatchString(h.Plugin) {
			return fmt.Errorf("plugin %q is not a plugin name", h.Plugin)
		}
		if h.Event != "" || len(h.Command) > 0 || h.TimeoutMs != 0 {
			return fmt.Errorf("plugin %s: a guard plugin entry takes no event, command or timeout_ms (the guard's manifest says when it runs, its limits bound it)", h.Plugin)
		}
		if len(h.Config) > 64 {
			return fmt.Errorf("plugin %s: config: %d entries, at most 64", h.Plugin, len(h.Config))
		}
		return nil
	}
	if h.FailOpen || h.Config != nil {
		return fmt.Errorf("fail_open and config are for guard plugins (\"plugin\")")
	}
	switch h.Event {
	case HookBeforeTool, HookAfterTool:
	case "":
		return fmt.Errorf("event is required: %q or %q", HookBeforeTool, HookAfterTool)
	default:
		return fmt.Errorf("event %q: must be %q or %q", h.Event, HookBeforeTool, HookAfterTool)
	}
	if len(h.Command) == 0 {
		return fmt.Errorf("command is required: the program's absolute path, then its arguments")
	}
	if len(h.Command) > maxHookArgs {
		return fmt.Errorf("command: %d arguments, at most %d", len(h.Command), maxHookArgs)
	}
	for j, a := range h.Command {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("command[%d]: contains a NUL byte", j)
		}
	}
	if p := h.Command[0]; !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("command[0] %q: must be an absolute, clean path (hooks are not looked up on a PATH)", p)
	}
	if h.TimeoutMs < 0 || h.TimeoutMs > MaxHookTimeout.Milliseconds() {
		return fmt.Errorf("timeout_ms %d: must be between 0 (the default, %s) and %d", h.TimeoutMs, DefaultHookTimeout, MaxHookTimeout.Milliseconds())
	}
	return nil
}

// HasCommandHooks reports whether p runs an operator command anywhere: at
// the top level or in a tenant (the policy file must then be writable by
// its owner alone; spec/hooks.md §2).
func (p *Policy) HasCommandHooks() bool {
	if HasCommands(p.Hooks) {
		return true
	}
	for _, t := range p.Tenants {
		if HasCommands(t.Hooks) {
			return true
		}
	}
	return false
}

func validateHookGlobs(globs []string) error {
	for _, g := range globs {
		if !toolGlobRE.MatchString(g) {
			return fmt.Errorf("tools: glob %q must be 1 to 256 characters without NUL or newline", g)
		}
	}
	return nil
}

// validateManifestHooks checks a guard's declared hooks: at least one
// glob, each a valid one; only a reactor can be a guard (the command and
// Extism forms have no hook ops).
func validateManifestHooks(m *abi.Manifest) error {
	h := m.Hooks
	if h == nil {
		return nil
	}
	if len(h.Before) == 0 && len(h.After) == 0 {
		return fmt.Errorf("hooks: declare the tool globs of \"before\" or \"after\"")
	}
	if m.Form != "" && m.Form != abi.FormReactor {
		return fmt.Errorf("hooks: only a reactor can be a guard (form %q)", m.Form)
	}
	for _, list := range [][]string{h.Before, h.After} {
		if len(list) > MaxHooks {
			return fmt.Errorf("hooks: %d globs, at most %d", len(list), MaxHooks)
		}
		for _, g := range list {
			if !toolGlobRE.MatchString(g) {
				return fmt.Errorf("hooks: glob %q must be 1 to 256 characters without NUL or newline", g)
			}
		}
	}
	return nil
}

// MatchAny reports whether one of globs matches name.
func MatchAny(globs []string, name string) bool {
	for _, g := range globs {
		if matchPattern(g, name) {
			return true
		}
	}
	return false
}
