// Command packages is the built-in plugin sandbox_get_packages: the
// installed Python distributions (asked of python3's importlib.metadata)
// and global Node.js packages (read by node from its global node_modules),
// as plain text, through the aiod:process family.
// spec/sandbox-tools.md describes the tool.
package main

import (
	"strings"
	"time"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/process"
)

// Args are the tool's arguments.
type Args struct {
	Language *string `json:"language"`
}

// Name is the tool's (and the plugin's) name.
const Name = "sandbox_get_packages"

// NotFound is aiod's answer for a language it does not know.
const NotFound = "No packages found for the specified language. Sandbox only support nodejs and python."

// InputSchema is the tool's input schema, keys sorted as aiod emits them.
const InputSchema = `{"properties":{"language":{"description":"Language whose installed packages to list: 'python' or 'nodejs'. Omit it to list both.","enum":["python","nodejs"],"type":"string"}},"type":"object"}`

// pythonLister prints name==version of every installed distribution.
const pythonLister = `import importlib.metadata as md
seen = {}
for d in md.distributions():
    n = d.metadata.get("Name")
    if n and n.lower() not in seen:
        seen[n.lower()] = (n, d.version)
for k in sorted(seen):
    print(seen[k][0] + "==" + seen[k][1])
`

// nodeLister prints name==version of every package in node's global
// node_modules (scoped packages included).
const nodeLister = `const fs = require('fs'), path = require('path');
const root = path.join(path.dirname(path.dirname(process.execPath)), 'lib', 'node_modules');
const out = [];
const add = (dir) => {
  try {
    const p = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    if (p.name && p.version) out.push(p.name + '==' + p.version);
  } catch (e) {}
};
let names = [];
try { names = fs.readdirSync(root); } catch (e) {}
for (const n of names) {
  if (n.startsWith('.')) continue;
  if (n.startsWith('@')) {
    let subs = [];
    try { subs = fs.readdirSync(path.join(root, n)); } catch (e) {}
    for (const s of subs) add(path.join(root, n, s));
  } else add(path.join(root, n));
}
out.sort();
console.log(out.join('\n'));
`

func init() {
	sdk.Plugin(sdk.Info{
		Name:         Name,
		Version:      "1.0.0",
		Description:  "aiod built-in: installed Python and Node.js packages.",
		Capabilities: abi.Capabilities{Process: &abi.ProcessScope{Commands: []string{"python3", "node"}, Cwd: []string{"$SANDBOX"}}},
		Limits:       abi.Limits{TimeoutMs: 70000},
	})
	sdk.AddTool(sdk.Tool{
		Name:        Name,
		Title:       "Installed packages",
		Annotations: sdk.Behavior{ReadOnly: true}.Annotations(),
		Description: "Get installed packages in the sandbox: Python (pip-style name==version) or Node.js (global packages). Without language, both.",
		InputSchema: InputSchema,
	}, Run)
}

func main() {}

// Run lists the packages.
func Run(_ *sdk.Ctx, a Args) (*sdk.Result, error) {
	lang := ""
	if a.Language != nil {
		switch strings.ToLower(strings.TrimSpace(*a.Language)) {
		case "":
		case "python", "py", "python3":
			lang = "python"
		case "nodejs", "node", "javascript", "js":
			lang = "nodejs"
		default:
			return sdk.TextResult(NotFound), nil
		}
	}
	var sections []string
	if lang == "" || lang == "python" {
		sections = append(sections, section("Python Packages:", "python3", []string{"python3", "-c", pythonLister}))
	}
	if lang == "" || lang == "nodejs" {
		sections = append(sections, section("Node.js Packages:", "node", []string{"node", "-e", nodeLister}))
	}
	return sdk.TextResult(strings.Join(sections, "\n\n")), nil
}

// section runs a lister and formats its lines under a heading.
func section(title, runtime string, argv []string) string {
	res, err := process.Spawn(process.SpawnRequest{Argv: argv, Timeout: 30 * time.Second, MaxOutputBytes: 4 << 20})
	var b strings.Builder
	b.WriteString(title)
	switch {
	case err != nil:
		b.WriteString("\n  (" + runtime + " is not available: " + err.Error() + ")")
		return b.String()
	case res.ExitCode != 0:
		b.WriteString("\n  (" + runtime + " failed: " + strings.TrimSpace(res.Stderr) + ")")
		return b.String()
	}
	var pkgs []string
	for _, l := range strings.Split(res.Stdout, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			pkgs = append(pkgs, l)
		}
	}
	if len(pkgs) == 0 {
		b.WriteString("\n  (none)")
	}
	for _, p := range pkgs {
		b.WriteString("\n  - " + p)
	}
	return b.String()
}
