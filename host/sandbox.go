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
	"github.com/aiodhq/aiod/host/server"
)

// sandbox is what GET /v2/sandbox and the per-domain part of GET
// /v1/capabilities report: the doctor's probes (the same as `aiod
// doctor`), with the host's own process containment and browser.
func (h *Host) sandbox(env caps.Env, cacheDir string) *server.Sandbox {
	bh, bp := h.cfg.Browser.Host, h.cfg.Browser.Port
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
		Chromium:  h.cfg.Browser.Path,
		Cgroups:   func() doctor.Check { return doctor.ContainmentCheck(h.fams.procs.Containment()) },
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
	return &server.Sandbox{Doctor: d, Identity: id, Version: Version, WorkspaceDir: ws,
		Browser: func(ctx context.Context) any { return h.browser.Status(ctx) }}
}
