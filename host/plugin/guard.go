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
// JSON; the answer is the guard's abi.HookAnswer, JSON, unchecked. The
// guard runs like any call of the plugin: on the owner's instances, with
// its grant's families, deadline, memory and fuel. Its traps, timeouts and
// limit violations are errors (the instance is discarded); the host is not
// affected.
func (r *Registry) CallGuard(ctx context.Context, name string, op uint64, owner, tool string, event []byte) ([]byte, error) {
	if op != abi.OpHookBefore && op != abi.OpHookAfter {
		return nil, fmt.Errorf("op %d is not a hook op", op)
	}
	return r.invokeCurrent(ctx, op, func(cat *Catalog) (*Plugin, CallRequest, error) {
		p := cat.plugin(name)
		if p == nil || p.Manifest.Hooks == nil {
			return nil, CallRequest{}, fmt.Errorf("guard %s: %w", name, ErrNotAGuard)
		}
		return p, CallRequest{Owner: owner, Name: tool, Args: event}, nil
	})
}

// plugin finds a loaded plugin by name.
func (c *Catalog) plugin(name string) *Plugin {
	for _, p := range c.Plugins {
		if p.Manifest.Name == name {
			return p
		}
	}
	return nil
}
