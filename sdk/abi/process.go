package abi

import "encoding/json"

// The wire types of aiod:process (spec/abi/v1/process.md).

// ProcessSpawnRequest is the request of aiod:process.spawn.
type ProcessSpawnRequest struct {
	Argv           []string          `json:"argv"`
	Env            map[string]string `json:"env,omitempty"`
	Cwd            string            `json:"cwd,omitempty"`
	Stdin          *string           `json:"stdin,omitempty"`
	TimeoutMs      int64             `json:"timeout_ms,omitempty"`
	MaxOutputBytes int64             `json:"max_output_bytes,omitempty"`
	// Progress sends the output as progress notifications of the calling
	// request while the program runs (when the client asked for progress).
	Progress bool `json:"progress,omitempty"`
	// Tools opens the program's channel back to the calling tenant's tools
	// (spec/abi/v1/process.md §3.5, spec/code-tools.md): fd 3 carries its
	// requests, fd 4 the answers. It needs the process scope's tools grant.
	Tools *ProcessTools `json:"tools,omitempty"`
}

// ProcessTools asks for a spawn's tool channel.
type ProcessTools struct {
	// MaxCalls is the most tool calls the program may make (at most and
	// by default MaxToolCalls).
	MaxCalls int `json:"max_calls,omitempty"`
}

// MaxToolCalls is the most tool calls one spawned program may make.
const MaxToolCalls = 200

// The tool channel's descriptors in the spawned program.
const (
	ToolRequestFD = 3 // the program writes its requests here
	ToolAnswerFD  = 4 // and reads the answers here
)

// ProcessSpawnResponse is the response of aiod:process.spawn.
type ProcessSpawnResponse struct {
	ExitCode        int    `json:"exit_code"`
	Signal          string `json:"signal"`
	TimedOut        bool   `json:"timed_out"`
	Killed          string `json:"killed"`
	DurationMs      int64  `json:"duration_ms"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	Program         string `json:"program"`
	Cwd             string `json:"cwd"`
	// ToolCalls is how many tool calls the program asked for on its tool
	// channel (refused ones included); 0 without one.
	ToolCalls int `json:"tool_calls,omitempty"`
}

// ProcessShellExecRequest is the request of aiod:process.shell_exec.
type ProcessShellExecRequest struct {
	Session        string `json:"session,omitempty"`
	NewSession     bool   `json:"new_session,omitempty"`
	Cmd            string `json:"cmd"`
	Cwd            string `json:"cwd,omitempty"`
	TimeoutMs      int64  `json:"timeout_ms,omitempty"`
	MaxOutputBytes int64  `json:"max_output_bytes,omitempty"`
	// Progress: as in ProcessSpawnRequest.
	Progress bool `json:"progress,omitempty"`
}

// ProcessShellExecResponse is the response of aiod:process.shell_exec.
type ProcessShellExecResponse struct {
	Session    string `json:"session"`
	Status     string `json:"status"`
	Output     string `json:"output"`
	ExitCode   *int   `json:"exit_code"`
	Cwd        string `json:"cwd"`
	Truncated  bool   `json:"truncated"`
	DurationMs int64  `json:"duration_ms"`
	Restarted  bool   `json:"restarted"`
	Reason     string `json:"reason"`
}

// Shell statuses (ProcessShellExecResponse.Status).
const (
	ShellCompleted   = "completed"
	ShellHardTimeout = "hard_timeout"
	ShellTerminated  = "terminated"
)

// DefaultShellSession is the session of a shell request that names none.
const DefaultShellSession = "default"

// ProcessShellCloseRequest is the request of aiod:process.shell_close.
type ProcessShellCloseRequest struct {
	Session string `json:"session,omitempty"`
}

// ProcessShellCloseResponse is the response of aiod:process.shell_close.
type ProcessShellCloseResponse struct {
	Closed bool `json:"closed"`
}

// ProcessWhichRequest is the request of aiod:process.which.
type ProcessWhichRequest struct {
	Names []string `json:"names"`
}

// ProcessWhichProgram is one program of a ProcessWhichResponse.
type ProcessWhichProgram struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Allowed bool   `json:"allowed"`
}

// ProcessWhichResponse is the response of aiod:process.which.
type ProcessWhichResponse struct {
	Programs []ProcessWhichProgram `json:"programs"`
}

// MaxWhichNames bounds one which request.
const MaxWhichNames = 64

// ProcessStartRequest is the request of aiod:process.start (ABI v1.1): a
// program whose stdout the plugin reads while it runs (read) and which it
// ends with wait. The fields are spawn's, and ClearEnv.
type ProcessStartRequest struct {
	Argv           []string          `json:"argv"`
	Env            map[string]string `json:"env,omitempty"`
	Cwd            string            `json:"cwd,omitempty"`
	Stdin          *string           `json:"stdin,omitempty"`
	TimeoutMs      int64             `json:"timeout_ms,omitempty"`
	MaxOutputBytes int64             `json:"max_output_bytes,omitempty"`
	// ClearEnv starts the child from an empty environment instead of the
	// host's safe base: it gets PATH (the default path, not the host's),
	// what a sandbox sets, and Env.
	ClearEnv bool `json:"clear_env,omitempty"`
}

// ProcessStartResponse is the response of aiod:process.start.
type ProcessStartResponse struct {
	// ID names the program in read and wait, within the call.
	ID      int    `json:"id"`
	Program string `json:"program"`
	Cwd     string `json:"cwd"`
}

// ProcessReadRequest is the request of aiod:process.read. Its response is
// not JSON: it is the next piece of stdout, raw, at most MaxBytes;
// empty means stdout has ended; the error code timeout means nothing
// arrived within TimeoutMs.
type ProcessReadRequest struct {
	ID        int   `json:"id"`
	MaxBytes  int   `json:"max_bytes,omitempty"`
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
	// Lines (v1.1) asks for whole lines only, with the host's reading of
	// each (spec/abi/v1/process.md §3.6): the response is then a line
	// index (LineIndex) followed by the lines.
	Lines bool `json:"lines,omitempty"`
	// Runs (v1.1) is a read with lines whose consecutive lines of these
	// types come as one entry (spec/abi/v1/process.md §3.6): the
	// response is then in RunEntry's format. At most 256 types.
	Runs []string `json:"runs,omitempty"`
	// Collect (v1.2) is a read with runs whose runs the host keeps in the
	// program's collection instead of answering them, once the stream's
	// first line was its meta event and until its summary
	// (spec/abi/v1/process.md §3.7): their entries come without bytes
	// (LineCollected), and the response ends after the first entry that
	// was not collected.
	Collect bool `json:"collect,omitempty"`
	// Add (v1.2, with Collect) are events the plugin files itself (each
	// one JSON object), appended to the collection, in order, before the
	// read.
	Add []json.RawMessage `json:"add,omitempty"`
}

// The response of a read with Lines: a little-endian uint32 count N, N
// entries of three uint32 (LineEntry bytes each): the line's length
// (without its newline), then where its top-level "type" string starts in
// the line and its length, or LineUnchecked twice when the host did not
// find the line to be one JSON object with a plain string type
// (jsonx.ScanObject); then the N lines back to back, without newlines.
const (
	LineEntry     = 12
	LineUnchecked = 0xFFFFFFFF
)

// The response of a read with Runs: a read with lines whose entries have
// a fourth uint32, the number of lines the entry holds (RunEntry bytes
// each). An entry of more than one line is a run: consecutive lines that
// are each one JSON object whose type is one of Runs and whose last byte
// is its closing brace, joined with commas (the inside of a JSON array),
// its type_start and type_length those of its first line.
const RunEntry = 16

// LineCollected (v1.2) is the type_start of an entry of a read with
// Collect whose lines the host kept in the program's collection: its
// length and type_length are 0, its fourth field the number of lines.
const LineCollected = 0xFFFFFFFE

// MaxCollectedBytes bounds one program's collection (v1.2).
const MaxCollectedBytes = 32 << 20

// ProcessWaitRequest is the request of aiod:process.wait.
type ProcessWaitRequest struct {
	ID int `json:"id"`
	// Kill stops the program first; otherwise wait waits for it to end.
	Kill bool `json:"kill,omitempty"`
	// KeepCollected (v1.2) keeps the program's collection (reads with
	// Collect) on the host as a kept response of the call, which
	// aiod:core.output_blob may write as it is (escape 0): the response's
	// Collected says which.
	KeepCollected bool `json:"keep_collected,omitempty"`
}

// ProcessCollected is the collection a wait with KeepCollected kept: the
// kept response's handle (-1 when nothing was collected), the number of
// events and their bytes (joined with commas).
type ProcessCollected struct {
	Kept   int64 `json:"kept"`
	Events int   `json:"events"`
	Bytes  int   `json:"bytes"`
}

// ProcessWaitResponse is the response of aiod:process.wait: spawn's,
// without stdout, whose size StdoutBytes gives.
type ProcessWaitResponse struct {
	ExitCode        int    `json:"exit_code"`
	Signal          string `json:"signal"`
	TimedOut        bool   `json:"timed_out"`
	Killed          string `json:"killed"`
	DurationMs      int64  `json:"duration_ms"`
	StdoutBytes     int64  `json:"stdout_bytes"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	Stderr          string `json:"stderr"`
	StderrTruncated bool   `json:"stderr_truncated"`
	// Collected (v1.2) answers KeepCollected; null without it.
	Collected *ProcessCollected `json:"collected"`
}

// MaxStartedPerCall bounds the programs one call may have started and not
// yet waited for.
const MaxStartedPerCall = 8
