package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Describe instantiates a reactor module with every family stubbed (no
// function may actually run) and returns the manifest it describes, with
// module and sha256 filled in. It is how `aiodpack` writes manifest.json
// from a plugin's Go declarations.
func Describe(ctx context.Context, eng runtime.Engine, wasm []byte, stubs []hostfn.Family) (*abi.Manifest, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := eng.Compile(ctx, wasm, runtime.Config{Name: "describe", Families: []hostfn.Family{core.New()}, Stubs: stubs})
	if err != nil {
		return nil, nil, err
	}
	defer c.Close(ctx)
	inst, err := c.Instantiate(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer inst.Close(ctx)
	call := &hostfn.Call{Plugin: "describe", MaxOutput: 16 << 20}
	if v, err := inst.Call(ctx, call, abi.ExportVersion); err != nil || v != abi.Version {
		return nil, nil, fmt.Errorf("module abi version %d (err %v), want %d", v, err, abi.Version)
	}
	ret, err := inst.Call(ctx, call, abi.ExportCall, abi.OpDescribe, 0, 0)
	if err != nil || ret != abi.RetOK {
		return nil, nil, fmt.Errorf("describe failed (code %d): %v: %s", ret, err, call.Output)
	}
	var m abi.Manifest
	if err := caps.StrictUnmarshal(call.Output, &m); err != nil {
		return nil, nil, fmt.Errorf("describe output: %w", err)
	}
	sum := sha256.Sum256(wasm)
	m.SHA256 = hex.EncodeToString(sum[:])
	m.Module = "plugin.wasm"
	if err := caps.ValidateManifest(&m); err != nil {
		return nil, nil, err
	}
	b, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	return &m, append(b, '\n'), nil
}
