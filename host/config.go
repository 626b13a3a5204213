package host

import (
	"fmt"
	"io/fs"
	"runtime/debug"

	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/internal/unionfs"
	"github.com/aiodhq/aiod/host/mcp"
)

// Listen defaults (Config.Host and Config.Port when zero; cmd/aiod shows
// them in its flag help).
const (
	DefaultHost = "127.0.0.1"
	DefaultPort = 18091
)

// Version is aiod's semantic version: the MCP serverInfo.version, what
// `aiod version` prints and what sandbox_get_context reports (through
// AIOD_VERSION in the environment of the programs the host runs).
const Version = "0.2.0"

// Commit is the source commit the binary was built from, set by `make build`
// with -ldflags "-X github.com/aiodhq/aiod/host.Commit=<hash>". Empty
// falls back to the Go toolchain's vcs.revision stamp, else "unknown"
// (see BuildCommit).
var Commit string

// BuildCommit is the commit this binary was built from: Commit when set,
// else the first 7 characters of the vcs.revision the Go toolchain stamps
// (with "-dirty" when the tree was modified), else "unknown".
func BuildCommit() string {
	if Commit != "" {
		return Commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 7 {
		rev = rev[:7]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// VersionString is "<Version> (<commit>)", e.g. "0.2.0 (8851bea)".
func VersionString() string { return fmt.Sprintf("%s (%s)", Version, BuildCommit()) }

// LockdownConfig is the locked-down multi-tenant mode (spec/lockdown.md):
// every process under bubblewrap, each tenant in its own /workspace and
// /tmp, plugins pinned by sha256, upstream tools pinned; a start that
// lacks any of it is refused.
type LockdownConfig struct {
	// Lockdown turns the mode on (--lockdown, AIO_LOCKDOWN).
	Lockdown bool
	// DataDir holds the tenants' directories,
	// <DataDir>/tenants/<owner>/{workspace,tmp} (--data-dir, AIO_DATA_DIR);
	// required in lockdown.
	DataDir string
}

// TenancyConfig is the multi-tenant part of Config (embedded in it): the
// tenants themselves are the policy file's "tenants" (spec/tenants.md);
// these say how clients prove who they are and what is recorded.
type TenancyConfig struct {
	// OAuth bearer tokens (spec/tenants.md §4): all three of issuer,
	// audience and JWKS (a file, or a loopback http(s) URL) turn it on;
	// OAuthTenantClaim names the claim holding the tenant ("sub" when
	// empty).
	OAuthIssuer      string
	OAuthAudience    string
	OAuthJWKS        string
	OAuthTenantClaim string
	// AuditLog, when set, is the file that gets one JSON line per MCP
	// request (spec/tenants.md §5).
	AuditLog string
	// AuditRequired refuses a request whose audit line cannot be written
	// (set by lockdown).
	AuditRequired bool
}

// ReplicaConfig is what one of several replicas behind a load balancer
// needs (aiod deploy; spec/protocol.md, "Replicas"), embedded in Config.
type ReplicaConfig struct {
	// StateKeyFile, when set, is the file of the keys MRTR requestState is
	// sealed with (--state-key-file, AIO_STATE_KEY_FILE; mcp.ParseStateKeys),
	// the same file on every replica so that a state opens on any of them.
	// SIGHUP and every reload read it again. Unset: a random key of the
	// process's own.
	StateKeyFile string
	// ReplicaID, when set, starts every legacy session id
	// (--replica-id, AIO_REPLICA_ID; mcp.ReplicaTag), what the load
	// balancer routes a session's later requests on.
	ReplicaID string
}

// stateKeys validates the replica id and reads the state key file (nil
// keys without one).
func (c ReplicaConfig) stateKeys() ([][]byte, error) {
	if c.ReplicaID != "" {
		if _, err := mcp.ReplicaTag(c.ReplicaID); err != nil {
			return nil, err
		}
	}
	if c.StateKeyFile == "" {
		return nil, nil
	}
	return mcp.ReadStateKeyFile(c.StateKeyFile)
}

// PageToolsConfig is the page tools of the browser plane (spec/page-tools.md):
// the 21 tools of @agent-infra/mcp-server-browser as one embedded plugin,
// served after the ten built-ins when the browser is launched
// (--browser launch) or when asked for (--page-tools, AIO_PAGE_TOOLS), so
// that a plain start lists exactly the ten.
type PageToolsConfig struct {
	// PageTools serves the page tools in attach mode too.
	PageTools bool
	// PageToolsFS holds the page tools' plugin package (plugins/browser.FS());
	// nil: this binary has none.
	PageToolsFS fs.FS
}

// served reports whether the page tools are served with the browser plane
// in mode: the package is there, the plane is on, and it is launched or
// they were asked for.
func (c PageToolsConfig) served(mode browser.Mode) bool {
	if c.PageToolsFS == nil || mode == browser.Off {
		return false
	}
	return c.PageTools || mode == browser.Launch
}

// builtins is the built-in packages the registry loads: builtins, plus the
// page tools' package when served. The page tools are not in the
// built-ins' "order" file, so they come after the ten.
func (c PageToolsConfig) builtins(builtins fs.FS, mode browser.Mode) fs.FS {
	if !c.served(mode) {
		return builtins
	}
	if builtins == nil {
		return c.PageToolsFS
	}
	return unionfs.New(builtins, c.PageToolsFS)
}
