package process

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/sdk/abi"
)

// This file is a spawn's tool channel (spec/abi/v1/process.md §3.5,
// spec/code-tools.md): two pipes the program inherits, fd 3 for its
// requests and fd 4 for the answers, one JSON line each way per call.
// The program's requests are untrusted bytes: ParseToolRequest reads
// them (FuzzParseToolRequest), and nothing the program writes can make
// the host read more than MaxToolRequest bytes at a time or answer more
// than MaxCalls calls.

// Limits of the tool channel.
const (
	// MaxToolRequest is the longest request line (the arguments of one
	// call), newline included.
	MaxToolRequest = 1 << 20
	// MaxToolAnswer is the most text of one answer the program is given;
	// the rest is cut, and the answer says so.
	MaxToolAnswer = 8 << 20
)

// Answer kinds (ToolAnswer.Error), what the program's ToolError carries.
const (
	ToolFailed   = "tool"     // the tool ran and answered isError
	ToolRefused  = "refused"  // the policy keeps the tool from code: the model must call it
	ToolUnknown  = "unknown"  // no such tool for this tenant
	ToolLimit    = "limit"    // past the program's calls, or a quota
	ToolInvalid  = "invalid"  // the request could not be read
	ToolInternal = "internal" // the call failed in aiod
)

// ToolCall is one tool call a spawned program asks for.
type ToolCall struct {
	Plugin string // the plugin that spawned the program
	Owner  string // the tenant it runs for
	Step   int    // 1 for the program's first request, and so on
	Name   string
	Args   json.RawMessage // a JSON object, or nil
}

// ToolAnswer is what the program is told of its call: the tool's text,
// and an error kind when the call did not succeed (Text then says why).
type ToolAnswer struct {
	Text  string `json:"text"`
	Error string `json:"error,omitempty"`
}

// ToolCaller makes a program's tool call: as its tenant, through the
// same allow-list, quotas, pins and audit as a client's call. ctx ends
// when the program does.
type ToolCaller func(ctx context.Context, call ToolCall) ToolAnswer

// SetToolCaller sets how spawned programs' tool calls are made; until it
// is set (and for a family not made by New), a spawn asking for tools is
// refused.
func SetToolCaller(f hostfn.Family, caller ToolCaller) {
	if pf, ok := f.(*Family); ok {
		pf.mu.Lock()
		pf.tools = caller
		pf.mu.Unlock()
	}
}

func (f *Family) toolCaller() ToolCaller {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tools
}

// ToolRequest is one request line of a program.
type ToolRequest struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ParseToolRequest reads one request line (without its newline): a JSON
// object with a non-empty "name" of at most 256 printable characters and
// "arguments" an object (absent or null: none). Anything else is an
// error that says what is wrong.
func ParseToolRequest(line []byte) (ToolRequest, error) {
	var r ToolRequest
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return r, errors.New("empty request: write one JSON object per line")
	}
	if line[0] != '{' {
		return r, errors.New("a request is a JSON object: {\"name\": ..., \"arguments\": {...}}")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return ToolRequest{}, fmt.Errorf("bad request: %v", err)
	}
	if dec.More() {
		return ToolRequest{}, errors.New("bad request: one JSON object per line")
	}
	if r.Name == "" {
		return ToolRequest{}, errors.New("bad request: name is required")
	}
	if len(r.Name) > 256 || !utf8.ValidString(r.Name) {
		return ToolRequest{}, errors.New("bad request: name is not a tool name")
	}
	for _, c := range r.Name {
		if c < 0x20 || c == 0x7f {
			return ToolRequest{}, errors.New("bad request: name is not a tool name")
		}
	}
	a := bytes.TrimSpace(r.Arguments)
	switch {
	case len(a) == 0 || string(a) == "null":
		r.Arguments = nil
	case a[0] != '{':
		return ToolRequest{}, errors.New("bad request: arguments must be an object")
	default:
		r.Arguments = a
	}
	return r, nil
}

// toolChannel is one spawn's tool channel.
type toolChannel struct {
	reqR, reqW *os.File // the program writes reqW (its fd 3)
	ansR, ansW *os.File // and reads ansR (its fd 4)
	calls      int      // requests read so far (serve's)
	done       chan struct{}
	cancel     func() // ends the call under way (set by spawn)
}

// openToolChannel makes the two pipes.
func openToolChannel() (*toolChannel, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ansR, ansW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	return &toolChannel{reqR: reqR, reqW: reqW, ansR: ansR, ansW: ansW, done: make(chan struct{})}, nil
}

// childFiles are the program's ends, as its fds 3 and 4.
func (t *toolChannel) childFiles() []*os.File { return []*os.File{t.reqW, t.ansR} }

// started closes the host's copies of the program's ends (so that the
// host sees end of file when the program and its children are gone).
func (t *toolChannel) started() {
	t.reqW.Close()
	t.ansR.Close()
}

// serve answers the program's requests until it closes its end, asks
// for a line too long, or close is called; each request is one step.
func (t *toolChannel) serve(ctx context.Context, base ToolCall, maxCalls int, caller ToolCaller) {
	defer close(t.done)
	// once serve is done, the program's writes fail and its reads end
	// rather than wait for nothing
	defer t.ansW.Close()
	defer t.reqR.Close()
	br := bufio.NewReaderSize(t.reqR, 64<<10)
	for {
		line, err := readLine(br, MaxToolRequest)
		if errors.Is(err, errLineTooLong) {
			t.answer(ToolAnswer{Error: ToolInvalid, Text: fmt.Sprintf("request over %d bytes: the tool channel is closed", MaxToolRequest)})
			return
		}
		if err != nil {
			return
		}
		t.calls++
		call := base
		call.Step = t.calls
		var a ToolAnswer
		if t.calls > maxCalls {
			a = ToolAnswer{Error: ToolLimit, Text: fmt.Sprintf("this program has made its %d tool calls, the most one program may make: make the call yourself, or split the work", maxCalls)}
		} else if r, perr := ParseToolRequest(line); perr != nil {
			a = ToolAnswer{Error: ToolInvalid, Text: perr.Error()}
		} else {
			call.Name, call.Args = r.Name, r.Arguments
			a = caller(ctx, call)
		}
		if len(a.Text) > MaxToolAnswer {
			cut := MaxToolAnswer
			for cut > 0 && !utf8.RuneStart(a.Text[cut]) {
				cut--
			}
			a.Text = a.Text[:cut] + fmt.Sprintf("\n... [cut at %d bytes]", MaxToolAnswer)
		}
		if !t.answer(a) {
			return
		}
	}
}

// answer writes one answer line; false when the program no longer reads.
func (t *toolChannel) answer(a ToolAnswer) bool {
	b, err := json.Marshal(a)
	if err != nil {
		return false
	}
	_, err = t.ansW.Write(append(b, '\n'))
	return err == nil
}

// close ends the channel after the program: serve returns (a read under
// way fails), and close waits for it.
func (t *toolChannel) close() {
	if t.cancel != nil {
		t.cancel()
	}
	t.reqR.Close()
	t.ansW.Close()
	<-t.done
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line of at most max bytes (newline included),
// without it; io.EOF at the end (a last line without a newline is
// dropped: the program did not finish writing it).
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > max {
			return nil, errLineTooLong
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// toolsOf checks a spawn's tool request against the grant and the host:
// the calls allowed (0: no channel).
func (f *Family) toolsOf(c *hostfn.Call, req *abi.ProcessSpawnRequest) (int, ToolCaller, error) {
	if req.Tools == nil {
		return 0, nil, nil
	}
	if !c.Grant.Tools {
		return 0, nil, hostfn.Errorf(abi.Denied, "the plugin has no tools grant: its programs cannot call tools")
	}
	caller := f.toolCaller()
	if caller == nil {
		return 0, nil, hostfn.Errorf(abi.Unavailable, "this host does not serve tool calls from programs")
	}
	n := req.Tools.MaxCalls
	if n < 0 {
		return 0, nil, hostfn.Errorf(abi.Invalid, "tools.max_calls must not be negative")
	}
	if n == 0 || n > abi.MaxToolCalls {
		n = abi.MaxToolCalls
	}
	return n, caller, nil
}
