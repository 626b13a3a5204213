package hostfn

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aiodhq/aiod/sdk/abi"
)

// ErrResultTooLarge is the trap cause when a guest writes more output than
// its max_result_bytes.
type ErrResultTooLarge struct{ Limit int64 }

func (e ErrResultTooLarge) Error() string {
	return fmt.Sprintf("result exceeds the limit max_result_bytes=%d", e.Limit)
}

type core struct{}

// Core returns the aiod:core family: input_read, output_write,
// response_read, log and progress (and the client and kept-response
// functions of client.go and blob.go).
func Core() Family { return core{} }

func (core) Name() abi.Family { return "" }

func (core) Defs() []Def {
	return []Def{
		{Module: abi.ModuleCore, Name: "input_read", Params: []ValueType{I32}, Fn: inputRead},
		{Module: abi.ModuleCore, Name: "output_write", Params: []ValueType{I32, I32}, Results: []ValueType{I32}, Fn: outputWrite},
		{Module: abi.ModuleCore, Name: "response_read", Params: []ValueType{I32}, Fn: responseRead},
		{Module: abi.ModuleCore, Name: "log", Params: []ValueType{I32, I32, I32}, Fn: logFn},
		{Module: abi.ModuleCore, Name: "progress", Params: []ValueType{F64, F64, I32, I32}, Fn: progressFn},
		clientInfoDef, clientInputDef, notifyDef,
		responseKeepDef, outputBlobDef,
	}
}

func inputRead(_ context.Context, c *Call, mem Memory, stack []uint64) {
	if len(c.Input) == 0 {
		return
	}
	if !mem.Write(uint32(stack[0]), c.Input) {
		panic(fmt.Errorf("aiod:core.input_read: buffer out of bounds"))
	}
}

func outputWrite(_ context.Context, c *Call, mem Memory, stack []uint64) {
	n := uint32(stack[1])
	if int64(len(c.Output))+int64(n) > c.MaxOutput {
		c.Overflow = true
		panic(ErrResultTooLarge{Limit: c.MaxOutput})
	}
	b, ok := mem.Read(uint32(stack[0]), n)
	if !ok {
		panic(fmt.Errorf("aiod:core.output_write: buffer out of bounds"))
	}
	c.Output = append(c.Output, b...)
	stack[0] = 0
}

func responseRead(_ context.Context, c *Call, mem Memory, stack []uint64) {
	if len(c.resp) == 0 {
		return
	}
	if !mem.Write(uint32(stack[0]), c.resp) {
		panic(fmt.Errorf("aiod:core.response_read: buffer out of bounds"))
	}
	c.resp = nil
}

const maxLogBytes = 64 << 10

func logFn(ctx context.Context, c *Call, mem Memory, stack []uint64) {
	level := int(uint32(stack[0]))
	if level < 0 || level >= len(abi.LogLevels) {
		level = 1
	}
	n := min(uint32(stack[2]), maxLogBytes)
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

func progressFn(_ context.Context, c *Call, mem Memory, stack []uint64) {
	prog := f64(stack[0])
	total := f64(stack[1])
	n := min(uint32(stack[3]), maxLogBytes)
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
