package plugin

import (
	"context"
	"errors"
	"fmt"

	"github.com/aiodhq/aiod/sdk/abi"
)

// ErrNotAGuard is returned by CallGuard for a plugin that is not loaded,
// or whose manifest declares no hooks.
var ErrNotAGuard = errors.New("not a loaded guard plugin")

// Guard returns the hooks the loaded plugin name declares (nil, false
// when it is not loaded or declares none).
func (r *Registry) Guard(name string) (*abi.Hooks, bool) {
	p := r.cat.Load().plugin(name)
	if p == nil || p.Manifest.Hooks == nil {
		return nil, false
	}
	return p.Manifest.Hooks, true
}

// CallGuard runs hook op (abi.OpHookBefore or abi.OpHookAfter) of guard
// plugin name about a call of tool by owner: event is the abi.HookEvent,
// JSON; the answer is the guard's abi.HookAnswer, unchecked (not even as
// JSON: the hook chain decodes it strictly; allow and keep as the SDKs
// write them come back as shared constants, which the caller must not
// change). The guard runs like any call of the plugin: on the owner's instances, with
// its grant's families, deadline, memory and fuel. Its traps, timeouts and
// limit violations are errors (the instance is discarded); the host is not
// affected.
func (r *Registry) CallGuard(ctx context.Context, name string, op uint64, owner, tool string, event []byte) ([]byte, error) {
	if op != abi.OpHookBefore && op != abi.OpHookAfter {
		return nil, fmt.Errorf("op %d is not a hook op", op)
	}
	req := CallRequest{Owner: owner, Name: tool, Args: event}
	for { // invokeCurrent, without its closure
		cat := r.cat.Load()
		p := cat.plugin(name)
		if p == nil || p.Manifest.Hooks == nil {
			return nil, fmt.Errorf("guard %s: %w", name, ErrNotAGuard)
		}
		out, err := r.invoke(ctx, p, op, req)
		if err == ErrUnknownTool && r.cat.Load() != cat && p.closed.Load() {
			continue
		}
		return out, err
	}
}

// plugin finds a loaded plugin by name (the first of that name), as a
// guard is looked up on every hook op.
func (c *Catalog) plugin(name string) *Plugin {
	if c.named != nil {
		return c.named[name]
	}
	for _, p := range c.Plugins {
		if p.Manifest.Name == name {
			return p
		}
	}
	return nil
}
