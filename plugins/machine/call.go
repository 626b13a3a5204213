package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/jsonx"
	"github.com/aiodhq/aiod/sdk/process"
)

// A call (spec/machine-mode.md §4, §5): the arguments become the command
// line, a command that requires confirmation asks the user first, the
// command runs in machine mode in the host's process sandbox (stdin
// closed, a clear environment with the tool's named variables, the call's
// deadline and output bound), and its stream becomes the result as seed
// 002's table says.

// The codes of the errors the adapter makes itself ("source": "aiod").
const (
	codeInvalidArguments = "INVALID_ARGUMENTS"
	codeNotConfirmed     = "NOT_CONFIRMED"
	codeCannotConfirm    = "CONFIRMATION_UNAVAILABLE"
	codeStartFailed      = "START_FAILED"
	codeNotJSONL         = "NOT_MACHINE_MODE"
	codeNoSummary        = "NO_SUMMARY"
	codeOutputLimit      = "OUTPUT_LIMIT"
	codeDeadline         = "DEADLINE"
	codeCanceled         = "CANCELED"
	codeInternal         = "ADAPTER_INTERNAL"
)

// adapterError is an error event the adapter makes.
type adapterError struct {
	Type      string `json:"type"`
	Source    string `json:"source"`
	Scope     string `json:"scope"`
	Category  string `json:"category"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

func newError(category, code, format string, a ...any) []byte {
	b, _ := json.Marshal(adapterError{Type: "aoi:error", Source: "aiod", Scope: "process", Category: category, Code: code,
		Message: fmt.Sprintf(format, a...)})
	return b
}

// call runs one tool.
func call(c *sdk.Ctx, tool string, args json.RawMessage) (*sdk.Result, error) {
	cfg, st, err := current()
	if err != nil {
		return result(nil, newError("internal", codeInternal, "configuration: %v", err), true), nil
	}
	b := st.Tools[tool]
	if b == nil {
		return result(nil, newError("internal", codeInternal, "tool %s is not one of this plugin's", tool), true), nil
	}
	cli, ok := cfg.Tools[b.CLI]
	if !ok {
		return result(nil, newError("internal", codeInternal, "tool %s: no registration %s", tool, b.CLI), true), nil
	}
	line, err := commandLine(cli, b, args)
	if err != nil {
		return result(nil, newError("usage", codeInvalidArguments, "%v", err), true), nil
	}
	confirmed := false
	if b.Confirm && !line.dryRun {
		// machine mode never prompts: the adapter asks the user, through
		// the client, before anything runs (in 2026-07-28 the call
		// stops here until the client answers, and runs again)
		if !c.Client().Has("elicitation") {
			return result(nil, newError("authz", codeCannotConfirm,
				"%s requires confirmation and this client cannot be asked (it declared no elicitation): it was not run", tool), true), nil
		}
		ans, err := c.Elicit("confirm", confirmMessage(line.argv(true)), confirmSchema)
		if err != nil {
			return result(nil, newError("authz", codeCannotConfirm, "%s requires confirmation, which could not be asked: %v; it was not run", tool, err), true), nil
		}
		if !ans.Accepted() || ans.Content["confirm"] != true {
			return result(nil, newError("authz", codeNotConfirmed, "the user did not confirm %s (%s): it was not run", tool, ans.Action), true), nil
		}
		confirmed = true
	}
	return run(c, cli, b, line.argv(confirmed)), nil
}

// confirmSchema is the form of the confirmation.
var confirmSchema = json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Run it","description":"Run this command now"}},"required":["confirm"]}`)

// confirmMessage says what would run.
func confirmMessage(argv []string) string {
	var q []string
	for _, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`") {
			a = strconv.Quote(a)
		}
		q = append(q, a)
	}
	s := strings.Join(q, " ")
	if len(s) > 600 {
		s = s[:600] + "..."
	}
	return "Confirm: run this command? It makes changes that may not be undone.\n\n" + s
}

// cmdLine is a call's command line in two parts: the program, its fixed
// arguments, the command's words and the flags; and the operands.
type cmdLine struct {
	head, ops []string
	dryRun    bool
}

// argv is the command line: head, --confirm when confirmed, --output
// jsonl, then "--" and the operands (so that no operand reads as a flag).
func (l cmdLine) argv(confirmed bool) []string {
	argv := slices.Clone(l.head)
	if confirmed {
		argv = append(argv, "--confirm")
	}
	argv = append(argv, "--output", "jsonl")
	if len(l.ops) > 0 {
		argv = append(append(argv, "--"), l.ops...)
	}
	return argv
}

// commandLine turns the arguments into the command line (cmdLine): the
// program and its fixed arguments, the command's words, --flag=value for
// each flag given (--flag alone for a boolean that is true), the
// adapter's flags, and the operands; and whether dry_run was asked for.
func commandLine(cli CLI, b *Binding, raw json.RawMessage) (cmdLine, error) {
	args := map[string]json.RawMessage{}
	if raw = bytes.TrimSpace(raw); len(raw) > 0 && string(raw) != "null" {
		// the members as they are (the host parsed the request: each
		// value is read where it is used); encoding/json's decoding of
		// the object cost more in wasm than the rest of the call's work
		// before the program starts
		err := jsonx.Members(raw, func(k string, v []byte) bool {
			args[strings.Clone(k)] = v
			return true
		})
		if err != nil {
			return cmdLine{}, fmt.Errorf("the arguments must be a JSON object: %v", err)
		}
	}
	known := map[string]bool{}
	argv := append(slices.Clone(cli.Command), b.Path...)
	for _, f := range b.Flags {
		known[f.Prop] = true
		v, ok := args[f.Prop]
		if !ok || string(v) == "null" {
			continue
		}
		switch f.Type {
		case "boolean":
			var on bool
			if err := json.Unmarshal(v, &on); err != nil {
				return cmdLine{}, fmt.Errorf("%s must be a boolean", f.Prop)
			}
			if on {
				argv = append(argv, "--"+f.Name)
			}
		case "array":
			vals, err := scalars(f.Prop, f.Items, v)
			if err != nil {
				return cmdLine{}, err
			}
			for _, s := range vals {
				argv = append(argv, "--"+f.Name+"="+s)
			}
		default:
			s, err := scalar(f.Prop, f.Type, v)
			if err != nil {
				return cmdLine{}, err
			}
			argv = append(argv, "--"+f.Name+"="+s)
		}
	}
	var ops []string
	for _, o := range b.Operands {
		known[o.Prop] = true
		v, ok := args[o.Prop]
		if !ok || string(v) == "null" {
			continue
		}
		if o.Variadic {
			vals, err := scalars(o.Prop, o.Items, v)
			if err != nil {
				return cmdLine{}, err
			}
			ops = append(ops, vals...)
			continue
		}
		s, err := scalar(o.Prop, o.Type, v)
		if err != nil {
			return cmdLine{}, err
		}
		ops = append(ops, s)
	}
	dryRun := false
	added := []struct {
		on   bool
		prop string
		typ  string
		flag string
	}{{b.Limit, "limit", "integer", "--limit="}, {b.Cursor, "cursor", "string", "--cursor="}, {b.IdempotencyKey, "idempotency_key", "string", "--idempotency-key="}}
	for _, a := range added {
		if !a.on {
			continue
		}
		known[a.prop] = true
		if v, ok := args[a.prop]; ok && string(v) != "null" {
			s, err := scalar(a.prop, a.typ, v)
			if err != nil {
				return cmdLine{}, err
			}
			if a.prop == "limit" {
				if n, _ := strconv.Atoi(s); n < 1 {
					return cmdLine{}, errors.New("limit must be at least 1")
				}
			}
			argv = append(argv, a.flag+s)
		}
	}
	if b.DryRun {
		known["dry_run"] = true
		if v, ok := args["dry_run"]; ok && string(v) != "null" {
			if err := json.Unmarshal(v, &dryRun); err != nil {
				return cmdLine{}, errors.New("dry_run must be a boolean")
			}
			if dryRun {
				argv = append(argv, "--dry-run")
			}
		}
	}
	for k := range args {
		if !known[k] {
			return cmdLine{}, fmt.Errorf("unknown argument %q", k)
		}
	}
	return cmdLine{head: argv, ops: ops, dryRun: dryRun}, nil
}

// scalar is one value of JSON type typ as a command-line word.
func scalar(prop, typ string, v json.RawMessage) (string, error) {
	v = bytes.TrimSpace(v)
	switch typ {
	case "integer":
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return "", fmt.Errorf("%s must be an integer", prop)
		}
		return strconv.FormatInt(n, 10), nil
	case "number":
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || len(v) == 0 || v[0] == '"' {
			return "", fmt.Errorf("%s must be a number", prop)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case "boolean":
		var on bool
		if err := json.Unmarshal(v, &on); err != nil {
			return "", fmt.Errorf("%s must be a boolean", prop)
		}
		return strconv.FormatBool(on), nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fmt.Errorf("%s must be a string", prop)
	}
	if strings.ContainsRune(s, 0) {
		return "", fmt.Errorf("%s must not contain NUL", prop)
	}
	return s, nil
}

// scalars is an array of values of type items.
func scalars(prop, items string, v json.RawMessage) ([]string, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, fmt.Errorf("%s must be an array", prop)
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, err := scalar(prop+"[]", items, e)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// readWait is how long one read waits for output before reading again.
const readWait = 10 * time.Second

// run runs the command line and translates its stream into the result.
func run(c *sdk.Ctx, cli CLI, b *Binding, argv []string) *sdk.Result {
	p, err := process.Start(process.StartRequest{Argv: argv, Env: cli.Env, ClearEnv: true,
		Timeout: cli.timeout(), MaxOutputBytes: cli.maxOutput()})
	if err != nil {
		return result(nil, newError("internal", codeStartFailed, "%s could not be started: %v", argv[0], err), true)
	}
	col := &collector{command: b.Command, types: b.Types, progress: c.Progress}
	runs := runTypes(b.Types)
	var readErr error
	for {
		// the host splits the lines and checks them: the guest reads
		// no byte of a domain event. For a command whose schema names
		// its types the host keeps the runs of domain events itself
		// (collect) and the guest sees only the other lines, adding
		// back in the stream's order those it files (errors); else it
		// files the domain events that follow one another as one piece
		var lines []byte
		var err error
		if runs != nil {
			lines, err = p.ReadCollect(1<<20, readWait, runs, col.events)
			if err == nil || errors.Is(err, process.ErrTimeout) {
				col.events = col.events[:0] // the host has them now
			}
		} else {
			lines, err = p.ReadLines(1<<20, readWait)
		}
		if errors.Is(err, process.ErrTimeout) {
			continue
		}
		if err != nil {
			readErr = err
			break
		}
		if len(lines) == 0 {
			col.end()
			break
		}
		if runs != nil && !col.writeEntries(lines) || runs == nil && !col.writeLines(lines) {
			break
		}
	}
	kill := col.violation != "" || readErr != nil
	var res *process.WaitResult
	var err2 error
	if runs != nil {
		res, col.coll, err2 = p.WaitCollected(kill)
	} else {
		res, err2 = p.Wait(kill)
	}
	if err2 != nil {
		return result(col, newError("internal", codeInternal, "%v", err2), true)
	}
	switch {
	case res.Killed == "output_limit":
		return result(col, newError("limit", codeOutputLimit,
			"the command wrote more than %d bytes of JSONL and was stopped; ask for less (a limit, a narrower query)", cli.maxOutput()), true)
	case res.TimedOut:
		return result(col, newError("timeout", codeDeadline, "the command did not finish within %s and was stopped", cli.timeout()), true)
	case res.Killed == "canceled" || res.Killed == "closed":
		return result(col, newError("internal", codeCanceled, "the call ended before the command did"), true)
	case readErr != nil:
		return result(col, newError("internal", codeInternal, "reading the command's output: %v", readErr), true)
	case col.violation != "":
		return result(col, newError("internal", codeNotJSONL, "the command broke Machine Mode: %s", col.violation), true)
	case col.summary == nil:
		how := fmt.Sprintf("exit code %d", res.ExitCode)
		if res.Signal != "" {
			how = "killed by " + res.Signal
		} else if res.Killed != "" {
			how = "killed (" + res.Killed + ")"
		}
		if !col.meta {
			return result(col, newError("internal", codeNoSummary, "the stream ended without a summary (%s): it wrote no event", how), true)
		}
		return result(col, newError("internal", codeNoSummary, "the stream ended without a summary (%s): the command did not finish its run", how), true)
	}
	if col.fatal != nil {
		return result(col, col.fatal, true)
	}
	if !col.ok {
		return result(col, col.lastErr, true)
	}
	return result(col, nil, false)
}

// hostEscaped is the size from which the text block is escaped by the
// host: below it, escaping in the guest costs less than the host call.
const hostEscaped = 16 << 10

// result is the MCP result of a collected stream (col may be nil), with
// errEv (nil for none) as its error: structuredContent {"events", "summary",
// "error"}, and the same JSON as text.
func result(col *collector, errEv []byte, isError bool) *sdk.Result {
	buf := structured(col, errEv)
	if col != nil && col.coll != nil && col.coll.Events > 0 {
		// the events the host kept are written by the host, as they
		// are in structuredContent and escaped in the text block: the
		// guest's JSON holds their marker
		return sdk.JSONResult(json.RawMessage(buf), isError)
	}
	if len(buf) < hostEscaped {
		return &sdk.Result{Content: []sdk.Content{sdk.Text(unsafe.String(&buf[0], len(buf)))}, Structured: json.RawMessage(buf), IsError: isError}
	}
	// the text block is the same JSON, escaped by the host: escaping a
	// large stream in the guest cost more than reading it
	return sdk.RawJSONResult(buf, isError)
}

// structured is the structuredContent of a result (buf is not written
// again: the text block may share it).
func structured(col *collector, errEv []byte) []byte {
	n := 64 + len(errEv)
	if col != nil {
		n += len(col.events) + len(col.summary)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, `{"events":[`...)
	if col != nil {
		buf = col.coll.AppendJSON(buf)
		if col.coll != nil && col.coll.Events > 0 && len(col.events) > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, col.events...)
	}
	buf = append(buf, `],"summary":`...)
	if col != nil && col.summary != nil {
		buf = append(buf, col.summary...)
	} else {
		buf = append(buf, "null"...)
	}
	if errEv != nil {
		buf = append(append(buf, `,"error":`...), errEv...)
	}
	return append(buf, '}')
}
