package plugin

// This file is configured plugins (ABI v1.1, spec/abi/v1.md §2.6): a
// plugin whose manifest says "configured" publishes the tools its
// configure operation makes from the operator's configuration for it,
// which the host runs at every load and every reload. Without a
// configuration the plugin is not loaded at all.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/sdk/abi"
)

// configured is what one configure run of a plugin made.
type configured struct {
	tools   []abi.Tool
	refused []abi.Refusal
	// call is what aiod:core.configuration answers the plugin's calls:
	// {"config": ..., "state": ...}
	call []byte
	// out is configure's output as it came (a rerun that gives the same
	// output changes nothing)
	out []byte
}

// SetConfigurations replaces the operator's configurations of configured
// plugins, by plugin name, for the next Reload (nil or a JSON null for a
// name: that plugin is not loaded).
func (r *Registry) SetConfigurations(c map[string]json.RawMessage) {
	r.mu.Lock()
	r.opts.Configurations = maps.Clone(c)
	r.mu.Unlock()
}

// configurationOf is the configuration of configured plugin name, nil when
// there is none.
func (r *Registry) configurationOf(name string) json.RawMessage {
	c := r.opts.Configurations[name]
	if len(bytes.TrimSpace(c)) == 0 || string(bytes.TrimSpace(c)) == "null" {
		return nil
	}
	return c
}

// configKey is the part of a configured plugin's key its configuration
// makes.
func configKey(cfg []byte) string {
	sum := sha256.Sum256(cfg)
	return "/config:" + hex.EncodeToString(sum[:12])
}

// configure runs p's configure operation with its configuration and keeps
// what it made; p is loaded (compiled, checked).
func (r *Registry) configure(ctx context.Context, p *Plugin) error {
	c, err := r.runConfigure(ctx, p)
	if err != nil {
		return err
	}
	p.conf.Store(c)
	r.logConfigured(p)
	return nil
}

// runConfigure runs p's configure operation and checks its output: a tool
// that is not a valid declaration, or that names a tool already made, is
// refused (the reason joins the plugin's refusals); a plugin that does not
// implement configure, fails it or answers something else than a
// configuration is refused as a whole.
func (r *Registry) runConfigure(ctx context.Context, p *Plugin) (*configured, error) {
	args, err := json.Marshal(map[string]json.RawMessage{"config": p.config})
	if err != nil {
		return nil, err
	}
	out, err := r.run(ctx, p, abi.OpConfigure, CallRequest{Owner: DefaultOwner, Name: "configure", Args: args})
	if err != nil {
		return nil, fmt.Errorf("plugin %s: configure: %w", p.Manifest.Name, err)
	}
	var doc abi.Configured
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("plugin %s: configure returned no configuration: %w", p.Manifest.Name, err)
	}
	c := &configured{refused: doc.Refused, out: append([]byte(nil), out...)}
	seen := map[string]bool{}
	for _, t := range doc.Tools {
		if err := caps.ValidateTool(t); err != nil {
			c.refused = append(c.refused, abi.Refusal{Name: t.Name, Reason: err.Error()})
			continue
		}
		if seen[t.Name] {
			c.refused = append(c.refused, abi.Refusal{Name: t.Name, Reason: fmt.Sprintf("tool %s is made twice", t.Name)})
			continue
		}
		seen[t.Name] = true
		c.tools = append(c.tools, t)
	}
	state := doc.State
	if len(state) == 0 {
		state = json.RawMessage("null")
	}
	if c.call, err = json.Marshal(abi.ConfigurationResponse{Config: p.config, State: state}); err != nil {
		return nil, err
	}
	return c, nil
}

// logConfigured logs what configuring p made.
func (r *Registry) logConfigured(p *Plugin) {
	c := p.conf.Load()
	names := make([]string, len(c.tools))
	for i, t := range c.tools {
		names[i] = t.Name
	}
	p.log.Info("plugin configured", "tools", names, "refused", len(c.refused))
	for _, f := range c.refused {
		p.log.Warn("configuration refused", "name", f.Name, "reason", f.Reason)
	}
}

// reconfigure is a reload of configured plugin old, unchanged otherwise
// (module, manifest, grant, configuration): its configure runs again, and
// when it makes the same as before old stays; otherwise a new version of
// the plugin takes what it made. old holds the reference the new
// generation takes (prepare); on failure it is given back.
func (r *Registry) reconfigure(ctx context.Context, s source, old *Plugin) (*Plugin, error) {
	if err := old.await(ctx); err != nil {
		r.releasePlugin(old)
		return nil, err
	}
	c, err := r.runConfigure(ctx, old)
	if err != nil {
		r.releasePlugin(old)
		return nil, err
	}
	if bytes.Equal(c.out, old.conf.Load().out) {
		return old, nil
	}
	r.releasePlugin(old)
	p, fams, err := r.prepare(s, nil)
	if err != nil {
		return nil, err
	}
	if err := r.finish(ctx, p, &s, fams, old); err != nil {
		p.close()
		return nil, err
	}
	p.conf.Store(c)
	r.logConfigured(p)
	return p, nil
}

// tools are the tools p publishes: its manifest's, or, configured, what
// its configuration made.
func (p *Plugin) tools() []abi.Tool {
	if c := p.conf.Load(); c != nil {
		return c.tools
	}
	return p.Manifest.Tools
}

// Tools are the tools p publishes (a configured plugin's come from its
// configuration).
func (p *Plugin) Tools() []abi.Tool { return slices.Clone(p.tools()) }

// Refused are the parts of a configured plugin's configuration it
// refused, and why (nil for other plugins).
func (p *Plugin) Refused() []abi.Refusal {
	c := p.conf.Load()
	if c == nil {
		return nil
	}
	return slices.Clone(c.refused)
}
