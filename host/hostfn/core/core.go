// Package core is the aiod:core host function family (spec/abi/v1.md),
// linked into every plugin: input, output, log, progress, the pending and
// kept responses, and the way to the MCP client.
package core

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/sdk/abi"
)

type core struct{}

// New returns the aiod:core family: input_read, output_write,
// response_read, log and progress (and the client and kept-response
// functions of client.go and blob.go).
func New() hostfn.Family { return core{} }

func (core) Name() abi.Family { return "" }

func (core) Defs() []hostfn.Def {
	return []hostfn.Def{
		{Module: abi.ModuleCore, Name: "input_read", Params: []hostfn.ValueType{hostfn.I32}, Fn: inputRead},
		{Module: abi.ModuleCore, Name: "output_write", Params: []hostfn.ValueType{hostfn.I32, hostfn.I32}, Results: []hostfn.ValueType{hostfn.I32}, Fn: outputWrite},
		{Module: abi.ModuleCore, Name: "response_read", Params: []hostfn.ValueType{hostfn.I32}, Fn: responseRead},
		{Module: abi.ModuleCore, Name: "log", Params: []hostfn.ValueType{hostfn.I32, hostfn.I32, hostfn.I32}, Fn: logFn},
		{Module: abi.ModuleCore, Name: "progress", Params: []hostfn.ValueType{hostfn.F64, hostfn.F64, hostfn.I32, hostfn.I32}, Fn: progressFn},
		clientInfoDef, clientInputDef, notifyDef,
		responseKeepDef, outputBlobDef, bytesKeepDef,
		hostfn.ReqResp(abi.ModuleCore, "configuration", configuration),
	}
}

// configuration answers aiod:core.configuration (ABI v1.1): the
// configuration and state of a configured plugin's load
// (abi.ConfigurationResponse), {"config":null,"state":null} for others.
func configuration(_ context.Context, c *hostfn.Call, _ []byte) ([]byte, error) {
	if len(c.Configuration) == 0 {
		return []byte(`{"config":null,"state":null}`), nil
	}
	return c.Configuration, nil
}

func inputRead(_ context.Context, c *hostfn.Call, mem hostfn.Memory, stack []uint64) {
	if len(c.Input) == 0 {
		return
	}
	if !mem.Write(uint32(stack[0]), c.Input) {
		panic(fmt.Errorf("aiod:core.input_read: buffer out of bounds"))
	}
}

func outputWrite(_ context.Context, c *hostfn.Call, mem hostfn.Memory, stack []uint64) {
	n := uint32(stack[1])
	if int64(len(c.Output))+int64(n) > c.MaxOutput {
		c.Overflow = true
		panic(hostfn.ErrResultTooLarge{Limit: c.MaxOutput})
	}
	b, ok := mem.Read(uint32(stack[0]), n)
	if !ok {
		panic(fmt.Errorf("aiod:core.output_write: buffer out of bounds"))
	}
	c.Output = append(c.Output, b...)
	stack[0] = 0
}

func responseRead(_ context.Context, c *hostfn.Call, mem hostfn.Memory, stack []uint64) {
	if len(c.Response) == 0 {
		return
	}
	if !mem.Write(uint32(stack[0]), c.Response) {
		panic(fmt.Errorf("aiod:core.response_read: buffer out of bounds"))
	}
	c.Response = nil
}

// MaxLogBytes bounds one log or progress message (longer ones are cut).
const MaxLogBytes = 64 << 10

func logFn(ctx context.Context, c *hostfn.Call, mem hostfn.Memory, stack []uint64) {
	level := int(uint32(stack[0]))
	if level < 0 || level >= len(abi.LogLevels) {
		level = 1
	}
	n := min(uint32(stack[2]), MaxLogBytes)
	b, ok := mem.Read(uint32(stack[1]), n)
	if !ok {
		panic(fmt.Errorf("aiod:core.log: buffer out of bounds"))
	}
	msg := string(b)
	if c.Log != nil {
		sl := slog.LevelInfo
		switch {
		case level == 0:
			sl = slog.LevelDebug
		case level == 3:
			sl = slog.LevelWarn
		case level >= 4:
			sl = slog.LevelError
		}
		c.Log.Log(ctx, sl, "plugin log", "plugin", c.Plugin, "msg", msg)
	}
	if c.Notify != nil {
		c.Notify("notifications/message", map[string]any{"level": abi.LogLevels[level], "logger": c.Plugin, "data": msg})
	}
}

func progressFn(_ context.Context, c *hostfn.Call, mem hostfn.Memory, stack []uint64) {
	prog := f64(stack[0])
	total := f64(stack[1])
	n := min(uint32(stack[3]), MaxLogBytes)
	b, ok := mem.Read(uint32(stack[2]), n)
	if !ok {
		panic(fmt.Errorf("aiod:core.progress: buffer out of bounds"))
	}
	if c.Notify != nil {
		p := map[string]any{"progress": prog}
		if total > 0 {
			p["total"] = total
		}
		if len(b) > 0 {
			p["message"] = string(b)
		}
		c.Notify("notifications/progress", p)
	}
}
