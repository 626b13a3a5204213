package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
)

// The guard is an http.RoundTripper under the go-sdk client's transport. The
// go-sdk client does the protocol (discover or initialize, sessions, headers,
// DELETE, the standalone stream, cancellation); the guard adds what it cannot
// do, at the one place every answer passes:
//
//   - it keeps the raw JSON of the result of a request that carries a slot
//     (the go-sdk hands back decoded structs, which drop unknown fields and
//     fail on unknown content types);
//   - it relays the progress and log notifications found on a call's own SSE
//     stream to that call's notify function (the go-sdk delivers them to one
//     client-wide handler with no link to the request);
//   - it bounds every answer: a body or SSE event over the size limit, or one
//     that is not a JSON-RPC message, is replaced by a JSON-RPC error answer
//     for that request id (the go-sdk would read an unbounded JSON body, and a
//     malformed one breaks its whole connection, failing every call in
//     flight);
//   - it notices a 404 to a request that carried a session id (the server
//     forgot the session), so the upstream reopens it.

// slot collects, for one request, what the guard saw of its answer.
type slot struct {
	method string                                      // the JSON-RPC method it captures
	notify func(method string, params json.RawMessage) // nil: notifications dropped

	mu     sync.Mutex
	result json.RawMessage // the raw "result" of the answer
	err    error           // the guard replaced the answer (too large, malformed)
}

func (s *slot) set(result json.RawMessage, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A 2026-07-28 input_required answer is a round, not the answer: the
	// go-sdk sends the request again, and the next answer replaces it.
	if (s.result == nil && s.err == nil) || (s.err == nil && interim(s.result)) {
		s.result, s.err = result, err
	}
}

func (s *slot) get() (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.result, s.err
}

// interim reports whether a result is an input_required round.
func interim(result json.RawMessage) bool {
	if !bytes.Contains(result, []byte(`"input_required"`)) {
		return false
	}
	var r struct {
		ResultType string `json:"resultType"`
	}
	return json.Unmarshal(result, &r) == nil && r.ResultType == "input_required"
}

type slotKey struct{}

func withSlot(ctx context.Context, s *slot) context.Context {
	return context.WithValue(ctx, slotKey{}, s)
}

// guardError is an answer the guard refused; its text goes into the isError
// result the caller sees.
type guardError struct{ msg string }

func (e *guardError) Error() string { return e.msg }

type guard struct {
	base        http.RoundTripper
	limit       int64
	sessionLost func() // called on a 404 to a request with a session id
	// capture sees the headers and params of each tools/list request.
	capture func(h http.Header, params json.RawMessage)
	// refused sees the status of a POST answered 400, 404 or 405 (a
	// server that may speak the 2024-11-05 transport: sse.go).
	refused func(status int)
	// streamCut is told why a GET stream was ended (an event too large or
	// not JSON-RPC): on the 2024-11-05 transport the answers come on it.
	streamCut func(why string)
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil {
		resp, err := g.base.RoundTrip(req)
		if err == nil && req.Method == http.MethodGet {
			g.checkLost(req, resp)
			if isSSE(resp) {
				// The standalone stream: bound its events too.
				f := newSSEFilter(resp.Body, g.limit, nil, nil)
				f.cut = g.streamCut
				resp.Body = f
			}
		}
		return resp, err
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	var call *wireMsg
	if m, err := decodeWire(body); err == nil && m.isCall() {
		call = m
		if m.Method == "tools/list" && g.capture != nil {
			g.capture(req.Header, m.Params)
		}
	}
	resp, err := g.base.RoundTrip(req)
	if err == nil && g.refused != nil && legacyRefusal(resp.StatusCode) && req.Header.Get("Mcp-Session-Id") == "" {
		g.refused(resp.StatusCode)
	}
	if err != nil || call == nil {
		return resp, err
	}
	g.checkLost(req, resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body = limitBody(resp.Body, g.limit) // error bodies are read whole by the go-sdk
		return resp, nil
	}
	sl, _ := req.Context().Value(slotKey{}).(*slot)
	if sl != nil && sl.method != call.Method {
		sl = nil // e.g. the notifications/cancelled of a cancelled call
	}
	switch {
	case isSSE(resp):
		f := newSSEFilter(resp.Body, g.limit, call, sl)
		if a, _ := req.Context().Value(askKey{}).(*ask); a != nil && sl != nil {
			f.askID = a.id // input requests on this stream are this call's
		}
		resp.Body = f
	case mediaType(resp) == "application/json":
		g.guardJSON(resp, call, sl)
	}
	return resp, nil
}

func (g *guard) checkLost(req *http.Request, resp *http.Response) {
	if resp.StatusCode == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "" && g.sessionLost != nil {
		g.sessionLost()
	}
}

// guardJSON reads a JSON answer (bounded), keeps the raw result for the slot,
// and replaces an answer it cannot pass on with an error answer.
func (g *guard) guardJSON(resp *http.Response, call *wireMsg, sl *slot) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, g.limit+1))
	resp.Body.Close()
	var out []byte
	switch {
	case err != nil:
		out = refuse(call, sl, fmt.Sprintf("reading the answer: %v", err))
	case int64(len(b)) > g.limit:
		out = refuse(call, sl, fmt.Sprintf("answer exceeds the size limit of %d bytes", g.limit))
	default:
		r, derr := decodeWire(b)
		switch {
		case derr != nil:
			out = refuse(call, sl, fmt.Sprintf("answer is not a JSON-RPC message: %v", derr))
		case r.isRequest():
			out = refuse(call, sl, "answer is a JSON-RPC request, not a response")
		default:
			if sl != nil && r.idKey() == call.idKey() && r.Error == nil {
				sl.set(r.Result, nil) // decoded into its own bytes
			}
			out = b
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Del("Content-Length")
}

// refuse records why the answer was replaced and returns the JSON-RPC error
// answer the go-sdk client gets instead.
func refuse(call *wireMsg, sl *slot, why string) []byte {
	if sl != nil {
		sl.set(nil, &guardError{why})
	}
	return errorAnswer(call, why)
}

func mediaType(resp *http.Response) string {
	t, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return strings.ToLower(t)
}

func isSSE(resp *http.Response) bool { return mediaType(resp) == "text/event-stream" }

type limitedBody struct {
	io.Reader
	io.Closer
}

func limitBody(rc io.ReadCloser, n int64) io.ReadCloser {
	return limitedBody{io.LimitReader(rc, n), rc}
}

// sseFilter re-emits an SSE stream event by event: it relays the call's
// notifications to its slot, keeps the call's raw result, ends the stream after
// the call's answer, and replaces an event that is too large or not JSON-RPC
// with an error answer for the call (then ends the stream).
type sseFilter struct {
	src   io.ReadCloser
	br    *bufio.Reader
	limit int64
	call  *wireMsg // nil: the standalone stream
	sl    *slot
	cut   func(why string) // the standalone stream was ended, and why
	askID string           // the call's ask, named in its input requests (input.go)
	out   bytes.Buffer
	err   error // returned once out is drained
}

func newSSEFilter(src io.ReadCloser, limit int64, call *wireMsg, sl *slot) *sseFilter {
	return &sseFilter{src: src, br: bufio.NewReaderSize(src, 32<<10), limit: limit, call: call, sl: sl}
}

func (f *sseFilter) Close() error { return f.src.Close() }

func (f *sseFilter) Read(p []byte) (int, error) {
	for f.out.Len() == 0 && f.err == nil {
		f.next()
	}
	if f.out.Len() > 0 {
		return f.out.Read(p)
	}
	return 0, f.err
}

var errTooLarge = errors.New("too large")

type sseEvent struct {
	id, name, retry string
	data            []byte
	hasData         bool
}

// next reads one event from the source and decides what to emit.
func (f *sseFilter) next() {
	ev, err := f.readEvent()
	if errors.Is(err, errTooLarge) {
		f.replace(fmt.Sprintf("an SSE event exceeds the size limit of %d bytes", f.limit))
		return
	}
	if err != nil {
		if ev.hasData || ev.id != "" {
			f.emit(ev) // a last event without its blank line
		}
		f.err = err
		return
	}
	if !ev.hasData || len(ev.data) == 0 || (ev.name != "" && ev.name != "message") {
		f.emit(ev)
		return
	}
	m, derr := decodeWire(ev.data)
	if derr != nil {
		f.replace(fmt.Sprintf("an SSE event is not a JSON-RPC message: %v", derr))
		return
	}
	switch {
	case !m.isRequest():
		if f.call != nil && m.idKey() == f.call.idKey() {
			if f.sl != nil && m.Error == nil {
				f.sl.set(m.Result, nil) // decoded into its own bytes
			}
			f.emit(ev)
			f.err = io.EOF // the call's answer ends the stream
			return
		}
		f.emit(ev)
	default:
		if f.call != nil && !m.isCall() && (m.Method == "notifications/progress" || m.Method == "notifications/message") {
			if f.sl != nil && f.sl.notify != nil {
				f.sl.notify(m.Method, m.Params)
			}
			// Dropped from what the go-sdk reads; keep the id for resumption.
			f.emit(sseEvent{id: ev.id, retry: ev.retry})
			return
		}
		if m.isCall() {
			ev.data = tagAsk(ev.data, m, f.askID)
		}
		f.emit(ev)
	}
}

// replace ends the stream with an error answer for the call in place of the
// event that could not be passed on.
func (f *sseFilter) replace(why string) {
	if f.call == nil { // the standalone stream: just end it
		f.err = fmt.Errorf("standalone stream: %s", why)
		if f.cut != nil {
			f.cut(why)
		}
		return
	}
	b := refuse(f.call, f.sl, why)
	f.emit(sseEvent{name: "message", data: b, hasData: true})
	f.err = io.EOF
}

func (f *sseFilter) emit(ev sseEvent) {
	if ev.id == "" && ev.retry == "" && !ev.hasData && ev.name == "" {
		return
	}
	if ev.id != "" {
		fmt.Fprintf(&f.out, "id: %s\n", ev.id)
	}
	if ev.retry != "" {
		fmt.Fprintf(&f.out, "retry: %s\n", ev.retry)
	}
	if ev.name != "" {
		fmt.Fprintf(&f.out, "event: %s\n", ev.name)
	}
	if ev.hasData {
		for _, line := range bytes.Split(ev.data, []byte("\n")) {
			f.out.WriteString("data: ")
			f.out.Write(line)
			f.out.WriteByte('\n')
		}
	} else {
		f.out.WriteString("data:\n") // a priming event: id only
	}
	f.out.WriteByte('\n')
}

// readEvent reads lines up to a blank line; the event (all its lines) is
// bounded by the limit.
func (f *sseFilter) readEvent() (sseEvent, error) {
	var ev sseEvent
	var size int64
	for {
		line, err := f.readLine(f.limit - size)
		size += int64(len(line)) + 1
		if err != nil {
			return ev, err
		}
		if len(line) == 0 {
			if ev.hasData || ev.id != "" || ev.retry != "" || ev.name != "" {
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue // a comment (keep-alive)
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if ev.hasData {
				ev.data = append(ev.data, '\n')
			}
			ev.data = append(ev.data, value...)
			ev.hasData = true
		case "id":
			ev.id = string(value)
		case "event":
			ev.name = string(value)
		case "retry":
			ev.retry = string(value)
		}
	}
}

// readLine returns one line without its end of line, at most max bytes.
func (f *sseFilter) readLine(max int64) ([]byte, error) {
	var line []byte
	for {
		chunk, err := f.br.ReadSlice('\n')
		if int64(len(line)+len(chunk)) > max+2 {
			return nil, errTooLarge
		}
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return bytes.TrimRight(line, "\r\n"), nil
			}
			return bytes.TrimRight(line, "\r\n"), err
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}
