package plugin

// This file is the catalogue: one immutable generation of the tools,
// prompts and resources, built from the loaded plugins and swapped in
// whole.

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/aiodhq/aiod/host/mcp/catalog"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Catalog is one immutable generation of the tool catalogue.
type Catalog struct {
	Generation uint64
	Plugins    []*Plugin
	Tools      []*Tool
	byName     map[string]*Tool
	named      map[string]*Plugin // the first plugin of each name (plugin)
	snap       *catalog.Snapshot  // what the protocol layer reads
	surface                       // prompts, resources, resource templates (surface.go)
	// loadErrors holds, by plugin name, why a package was refused when
	// this generation was built.
	loadErrors map[string]string
}

// LoadError is why the package of plugin name was refused when this
// generation was built ("" if it was not).
func (c *Catalog) LoadError(name string) string { return c.loadErrors[name] }

// LoadErrors are the refusals of this generation's build, by plugin name
// (the package directory's name when its manifest did not parse).
func (c *Catalog) LoadErrors() map[string]string { return maps.Clone(c.loadErrors) }

// Tool is one tool in a catalogue.
type Tool struct {
	Decl   abi.Tool
	Plugin *Plugin
}

// Lookup finds a tool by name.
func (c *Catalog) Lookup(name string) *Tool { return c.byName[name] }

// ToolsJSON is the pre-rendered JSON array of the tool declarations, in
// catalogue order.
func (c *Catalog) ToolsJSON() []byte { return c.snap.ToolsJSON() }

// Snapshot is this generation as the protocol layer reads it.
func (c *Catalog) Snapshot() *catalog.Snapshot { return c.snap }

// build makes generation gen of the catalogue from plugins, in order
// (each holding a reference the catalogue takes over): their tools (the
// first plugin to name a tool keeps it), prompts and resources, rendered.
func (r *Registry) build(gen uint64, plugins []*Plugin) (*Catalog, error) {
	next := &Catalog{Generation: gen, Plugins: plugins, byName: map[string]*Tool{}, named: make(map[string]*Plugin, len(plugins))}
	for _, p := range plugins {
		if _, ok := next.named[p.Manifest.Name]; !ok {
			next.named[p.Manifest.Name] = p
		}
		for _, t := range p.tools() {
			if prev, clash := next.byName[t.Name]; clash {
				r.log.Warn("tool refused: name already taken", "tool", t.Name, "plugin", p.Manifest.Name, "kept", prev.Plugin.Manifest.Name)
				continue
			}
			tl := &Tool{Decl: t, Plugin: p}
			next.byName[t.Name] = tl
			next.Tools = append(next.Tools, tl)
		}
		next.addSurface(p, r.log.Warn)
	}
	prompts, resources, templates, err := next.renderSurface()
	if err != nil {
		return nil, fmt.Errorf("render prompts and resources: %w", err)
	}
	decls := make([]abi.Tool, len(next.Tools))
	var tasks map[string]string
	for i, t := range next.Tools {
		decls[i] = t.Decl
		if e := t.Decl.Execution; e != nil && (e.TaskSupport == "optional" || e.TaskSupport == "required") {
			if tasks == nil {
				tasks = map[string]string{}
			}
			tasks[t.Decl.Name] = e.TaskSupport
		}
	}
	lj, err := json.Marshal(decls)
	if err != nil {
		return nil, fmt.Errorf("render tools: %w", err)
	}
	next.snap = catalog.NewSnapshot(gen, lj, prompts, resources, templates, tasks)
	return next, nil
}

// swap makes next current, drops old's references and tells the OnSwap
// listeners. r.mu is held.
func (r *Registry) swap(old, next *Catalog) {
	r.cat.Store(next)
	for _, p := range old.Plugins {
		r.releasePlugin(p)
	}
	for _, f := range r.onSwap {
		f(next.snap)
	}
}
