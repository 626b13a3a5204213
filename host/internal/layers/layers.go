// Package layers checks that the module's packages point down: the
// engines see only the host function contract, the contract sees no
// family, the protocol layer does not see the plugin registry, the SDK does
// not see the host, and the deployment writer does not see the HTTP server.
// The rules are in Rules; TestLayers (run by make check) applies them to
// the module's import graph as `go list -deps` reports it, and names the
// import chain behind every violation.
package layers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Module is the module path the rules are written against.
const Module = "github.com/aiodhq/aiod"

// Graph is an import graph: each package's direct imports.
type Graph map[string][]string

// Rule forbids some packages (From) to depend, directly or not, on others
// (To).
type Rule struct {
	Name string
	// From reports whether pkg is subject to the rule.
	From func(pkg string) bool
	// To reports whether from may not depend on dep.
	To func(from, dep string) bool
}

// Violation is a package that depends on what a rule forbids, with the
// shortest import chain that leads there (Chain[0] is the package,
// Chain[len-1] the forbidden dependency).
type Violation struct {
	Rule  string
	Chain []string
}

func (v Violation) String() string {
	return v.Rule + ": " + strings.Join(v.Chain, " -> ")
}

// Check applies rules to every package of g and returns every violation:
// for each package and rule, each forbidden dependency reached without
// passing another (the first forbidden package on the way is the one to
// remove), with the shortest chain to it. The result is sorted.
func Check(g Graph, rules []Rule) []Violation {
	var out []Violation
	pkgs := make([]string, 0, len(g))
	for p := range g {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, r := range rules {
		for _, p := range pkgs {
			if !r.From(p) {
				continue
			}
			for _, chain := range forbidden(g, p, func(dep string) bool { return r.To(p, dep) }) {
				out = append(out, Violation{Rule: r.Name, Chain: chain})
			}
		}
	}
	slices.SortFunc(out, func(a, b Violation) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// forbidden walks p's dependencies breadth first (imports in order) and
// returns the shortest chain from p to each dependency bad reports,
// without walking on past one.
func forbidden(g Graph, p string, bad func(string) bool) [][]string {
	parent := map[string]string{p: ""}
	queue := []string{p}
	var out [][]string
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		for _, d := range g[q] {
			if _, seen := parent[d]; seen {
				continue
			}
			parent[d] = q
			if !bad(d) {
				queue = append(queue, d)
				continue
			}
			chain := []string{d}
			for x := q; x != ""; x = parent[x] {
				chain = append(chain, x)
			}
			slices.Reverse(chain)
			out = append(out, chain)
		}
	}
	return out
}

// List returns the import graph of patterns in the module at dir, as `go
// list -e -deps` reports it for the given environment additions (e.g.
// GOOS=wasip1): every package the patterns need, standard library
// included. Test files are not part of it.
func List(dir string, env []string, patterns ...string) (Graph, error) {
	args := append([]string{"list", "-e", "-deps", "-json=ImportPath,Imports,Error"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	g := Graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %v", err)
		}
		// A package whose files all build for another platform (a wasip1
		// plugin listed natively) has no imports here: nothing to check.
		if p.Error != nil && !strings.Contains(p.Error.Err, "build constraints exclude all Go files") {
			return nil, fmt.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		g[p.ImportPath] = p.Imports
	}
	return g, nil
}

// in reports whether pkg is path or below it.
func in(pkg, path string) bool {
	return pkg == path || strings.HasPrefix(pkg, path+"/")
}

// inAny reports whether pkg is any of paths or below one.
func inAny(pkg string, paths ...string) bool {
	for _, p := range paths {
		if in(pkg, p) {
			return true
		}
	}
	return false
}

// Module-relative paths.
func m(rel string) string { return Module + "/" + rel }

// Third-party modules the engines must not link: the browser's protocol
// and the MCP client (what the cdp and upstream families are built on).
const (
	chromedp = "github.com/chromedp"
	goSDK    = "github.com/modelcontextprotocol/go-sdk"
	fiber    = "github.com/gofiber/fiber"
	fasthttp = "github.com/valyala/fasthttp"
)

// IsEngine reports whether pkg is an engine: host/runtime and the engine
// implementations below it, with their conformance table (runtimetest) and
// what they share (callwatch).
// host/runtime/wasmtime/register is not one: it is the wasmtime engine's
// registration into the composition root (host.RegisterEngine), imported
// for its side effect by cmd/aiod and by tests, and imports host by design.
func IsEngine(pkg string) bool {
	if in(pkg, m("host/runtime/wasmtime/register")) {
		return false
	}
	return pkg == m("host/runtime") || inAny(pkg, m("host/runtime/wazero"), m("host/runtime/wasmtime"), m("host/runtime/runtimetest"), m("host/runtime/callwatch"))
}

// IsFamily reports whether pkg is a host function family (or a helper
// below the contract, such as hostfntest, that links one).
func IsFamily(pkg string) bool {
	return strings.HasPrefix(pkg, m("host/hostfn/"))
}

// belowFamilies are what the families are built on: an engine or the
// contract depending on one of them has a family's weight without its name.
func belowFamilies(dep string) bool {
	return inAny(dep, m("host/browser"), m("host/upstream"), m("host/fsroot"), m("host/proc"), chromedp, goSDK)
}

// SDKTestHost is what sdk/sdktest may import of the host: its fake host is
// made of the real files, process and state families (so a plugin's unit
// test exercises exactly the requests and answers the host will), and
// what they stand on (the spans of a family call, off unless a host turns
// tracing on). Nothing else under host/, and nothing at all for the
// rest of sdk/.
var SDKTestHost = []string{
	m("host/caps"), m("host/fsroot"), m("host/proc"), m("host/internal/pathx"), m("host/internal/tracing"),
	m("host/hostfn"), m("host/hostfn/core"), m("host/hostfn/files"), m("host/hostfn/process"), m("host/hostfn/state"), m("host/store"),
}

// Rules are the module's layering rules.
var Rules = []Rule{
	{
		Name: "an engine sees only the host function contract",
		From: IsEngine,
		To: func(_, dep string) bool {
			return IsFamily(dep) || belowFamilies(dep) || inAny(dep, m("host/plugin"), m("host/mcp"), m("host/server")) || dep == m("host")
		},
	},
	{
		Name: "the host function contract names no family",
		From: func(pkg string) bool { return pkg == m("host/hostfn") },
		To:   func(_, dep string) bool { return IsFamily(dep) || belowFamilies(dep) },
	},
	{
		Name: "host/mcp owns its types and does not import the plugin registry",
		From: func(pkg string) bool { return in(pkg, m("host/mcp")) },
		To:   func(_, dep string) bool { return in(dep, m("host/plugin")) },
	},
	{
		Name: "the SDK does not depend on the host",
		From: func(pkg string) bool { return in(pkg, m("sdk")) },
		To: func(from, dep string) bool {
			if !in(dep, m("host")) {
				return false
			}
			return !in(from, m("sdk/sdktest")) || !slices.Contains(SDKTestHost, dep)
		},
	},
	{
		Name: "host/deploy does not depend on the HTTP server",
		From: func(pkg string) bool { return in(pkg, m("host/deploy")) },
		To:   func(_, dep string) bool { return inAny(dep, m("host/server"), fiber, fasthttp) },
	},
}
