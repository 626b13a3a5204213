package host

import (
	"context"
	"net"
	"os"
	"os/user"
	goruntime "runtime"
	"strconv"

	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/doctor"
	"github.com/aiodhq/aiod/host/proc"
	"github.com/aiodhq/aiod/host/server"
)

// status is what GET /v2/sandbox and the per-domain part of GET
// /v1/capabilities report: the doctor's probes (the same as `aiod
// doctor`) of the cache directory, the workspace and the browser plane bc
// configures, with the host's own process containment and browser.
func status(env caps.Env, cacheDir string, bc browser.Config, procs *proc.Manager, br *browser.Browser) *server.Status {
	bh, bp := bc.Host, bc.Port
	if bh == "" {
		bh = browser.DefaultHost
	}
	if bp == 0 {
		bp = browser.DefaultPort
	}
	d := doctor.New(doctor.Options{
		CacheDir:  cacheDir,
		Workspace: env.Workspace,
		CDP:       net.JoinHostPort(bh, strconv.Itoa(bp)),
		Chromium:  bc.Path,
		Cgroups:   func() doctor.Check { return doctor.ContainmentCheck(procs.Containment()) },
	}, 0)
	ws := env.Workspace
	if ws == "" {
		ws = env.Home
	}
	id := map[string]any{"name": "aiod", "os": goruntime.GOOS, "arch": goruntime.GOARCH, "home_dir": env.Home}
	if hn, err := os.Hostname(); err == nil {
		id["hostname"] = hn
	}
	if u, err := user.Current(); err == nil {
		id["user"] = u.Username
	}
	return &server.Status{Doctor: d, Identity: id, Version: Version, WorkspaceDir: ws,
		Browser: func(ctx context.Context) any { return br.Status(ctx) }}
}
