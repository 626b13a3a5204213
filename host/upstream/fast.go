package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast path forwards the common tools/call by hand: a stateless
// 2026-07-28 upstream (no session id), a call without progress or log
// relaying, a tool whose input schema mirrors no argument into a header
// (x-mcp-header). The go-sdk client costs about twice what aiod's own
// handling of the call does (it decodes the request to set its headers, and
// the answer twice, each time with a 32 KiB buffer); for such a call all it
// does is one POST with the protocol's headers and the per-request _meta,
// which the fast path copies from the go-sdk's own tools/list of the same
// session (so the two paths send the same headers and the same _meta,
// whatever the go-sdk puts in them). Everything else, and anything the fast
// path does not expect (a 4xx, which says the request was refused before it
// ran), goes through the go-sdk client.

// fastPath is what the fast path copies from the session's go-sdk requests.
type fastPath struct {
	header http.Header     // the go-sdk's request headers, without the per-request ones
	meta   json.RawMessage // its params._meta (protocolVersion, clientInfo, clientCapabilities)
}

// capture records the headers and _meta of a tools/list the go-sdk sends on
// a stateless 2026-07-28 session (called by the guard).
func (u *upstream) capture(h http.Header, params json.RawMessage) {
	if h.Get("Mcp-Session-Id") != "" || h.Get("Mcp-Protocol-Version") < modern {
		return
	}
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Meta) < 2 || p.Meta[0] != '{' {
		return
	}
	hc := make(http.Header, len(h))
	for k, v := range h {
		switch {
		case k == "Mcp-Method", k == "Mcp-Name", k == "Content-Length", strings.HasPrefix(k, "Mcp-Param-"):
		default:
			hc[k] = append([]string(nil), v...)
		}
	}
	u.fast.Store(&fastPath{header: hc, meta: append(json.RawMessage(nil), p.Meta...)})
}

// fastTool reports whether tool may take the fast path: it is in the cached
// list and mirrors no argument into a header, and its name is a plain header
// value.
func (u *upstream) fastTool(tool string) bool {
	for i := 0; i < len(tool); i++ {
		if c := tool[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.plain[tool]
}

// errFastRefused: the upstream refused the fast request before running it;
// the call goes through the go-sdk client instead.
var errFastRefused = errors.New("fast path refused")

// fastCall forwards one tools/call without the go-sdk client. It answers as
// callOnce does, or errFastRefused.
func (u *upstream) fastCall(ctx context.Context, cs *mcp.ClientSession, fp *fastPath, tool string, args json.RawMessage) (json.RawMessage, error) {
	id := strconv.FormatInt(u.tokenSeq.Add(1), 10)
	name, _ := json.Marshal(tool)
	body := make([]byte, 0, 96+len(name)+len(args)+len(fp.meta))
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, id...)
	body = append(body, `,"method":"tools/call","params":{"name":`...)
	body = append(body, name...)
	if a := bytes.TrimSpace(args); len(a) > 0 && string(a) != "null" {
		body = append(body, `,"arguments":`...)
		body = append(body, a...)
	}
	body = append(body, `,"_meta":`...)
	body = append(body, metaWithTrace(ctx, fp.meta)...)
	body = append(body, "}}"...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.srv.URL, bytes.NewReader(body))
	if err != nil {
		return nil, errFastRefused
	}
	for k, v := range fp.header {
		req.Header[k] = v
	}
	req.Header["Mcp-Method"] = []string{"tools/call"}
	req.Header["Mcp-Name"] = []string{tool}
	resp, err := u.fc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			res, cerr, _ := u.ctxResult(ctx)
			return res, cerr
		}
		if res, ok := redirected(err); ok {
			return res, nil
		}
		u.drop(cs)
		return errorResult(fmt.Sprintf("upstream MCP server %q is not reachable: %v", u.srv.Name, err)), nil
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode <= 499:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		u.fast.Store(nil) // this session takes the go-sdk path from now on
		return nil, errFastRefused
	case resp.StatusCode != http.StatusOK:
		return errorResult(fmt.Sprintf("upstream MCP server %q answered HTTP %d", u.srv.Name, resp.StatusCode)), nil
	}
	var ans *wireMsg
	var why string
	switch mediaType(resp) {
	case "application/json":
		ans, why = u.fastJSON(resp.Body)
	case "text/event-stream":
		ans, why = u.fastSSE(resp.Body, id)
	default:
		why = fmt.Sprintf("answer has the content type %q", resp.Header.Get("Content-Type"))
	}
	switch {
	case ans == nil && ctx.Err() != nil:
		res, cerr, _ := u.ctxResult(ctx)
		return res, cerr
	case ans == nil:
		return errorResult(fmt.Sprintf("upstream MCP server %q: %s", u.srv.Name, why)), nil
	case ans.idKey() != "n"+id:
		return errorResult(fmt.Sprintf("upstream MCP server %q: answer is for another request (id %s)", u.srv.Name, ans.ID)), nil
	case ans.Error != nil:
		return nil, &RPCError{Server: u.srv.Name, Code: *ans.Error.Code, Message: ans.Error.Message, Data: ans.Error.Data}
	}
	return ans.Result, nil
}

// fastJSON reads a JSON answer, bounded.
func (u *upstream) fastJSON(r io.Reader) (*wireMsg, string) {
	limit := u.set.opts.MaxResultBytes
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	switch {
	case err != nil:
		return nil, fmt.Sprintf("reading the answer: %v", err)
	case int64(len(b)) > limit:
		return nil, fmt.Sprintf("answer exceeds the size limit of %d bytes", limit)
	}
	m, err := decodeWire(b)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("answer is not a JSON-RPC message: %v", err)
	case m.isRequest():
		return nil, "answer is a JSON-RPC request, not a response"
	}
	return m, ""
}

// fastSSE reads the call's stream up to its answer, each event bounded;
// notifications are dropped (no one asked for them).
func (u *upstream) fastSSE(r io.Reader, id string) (*wireMsg, string) {
	f := newSSEFilter(io.NopCloser(r), u.set.opts.MaxResultBytes, nil, nil)
	for {
		ev, err := f.readEvent()
		if errors.Is(err, errTooLarge) {
			return nil, fmt.Sprintf("an SSE event exceeds the size limit of %d bytes", f.limit)
		}
		if ev.hasData && len(ev.data) > 0 && (ev.name == "" || ev.name == "message") {
			m, derr := decodeWire(ev.data)
			if derr != nil {
				return nil, fmt.Sprintf("an SSE event is not a JSON-RPC message: %v", derr)
			}
			if !m.isRequest() && m.idKey() == "n"+id {
				return m, ""
			}
		}
		if err != nil {
			return nil, fmt.Sprintf("its stream ended without an answer: %v", err)
		}
	}
}
