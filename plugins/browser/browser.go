// Package browser embeds the page tools' plugin package (plugins/browser/page,
// the 21 tools of @agent-infra/mcp-server-browser over aiod:cdp), which
// `make build` compiles into plugins/browser/dist. It is apart from the ten
// built-ins (plugins/builtin): the host serves it after them only with
// --browser launch or --page-tools (spec/page-tools.md). As for the
// built-ins, the compiled module is a build output and is not committed.
package browser

import (
	"embed"
	"io/fs"

	"github.com/aiodhq/aiod/plugins/internal/dist"
)

//go:embed all:dist
var embedded embed.FS

// FS returns the directory holding the page tools' package.
func FS() fs.FS { return dist.Sub(embedded) }

// Present reports whether the page tools' module was embedded.
func Present() bool { return dist.Present(FS()) }
