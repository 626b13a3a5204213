package upstream

import (
	"encoding/json"
	"fmt"

	"github.com/aiodhq/aiod/sdk/jsonx"
)

// A 2026-07-28 upstream wraps its answer in the envelope of its hop: the
// result's "resultType" and its _meta["io.modelcontextprotocol/serverInfo"],
// which name the upstream server. aiod's client never talks to that server:
// the envelope it gets is aiod's, in its own era (host/mcp adds it). So Call
// hands back the answer without the upstream's envelope; everything else
// (content, structuredContent, isError, the tool's own _meta keys, unknown
// members) stays as the upstream wrote it, byte for byte and in its order.

const (
	metaServerInfo = "io.modelcontextprotocol/serverInfo"
	resultComplete = "complete"
)

// answer takes the upstream's envelope off a tools/call result. A resultType
// other than "complete" ("input_required", "task": nothing aiod asked for)
// is not an answer aiod can relay: an isError result naming the server.
func (u *upstream) answer(res json.RawMessage) json.RawMessage {
	ms, ok := members(res)
	if !ok {
		return res // not an object: the caller's problem, as before
	}
	var drop []bool // allocated at the first member dropped
	var meta []byte // the top-level _meta without serverInfo (nil: unchanged)
	metaAt := -1
	changed := false
	for i, m := range ms {
		switch m.Key {
		case "resultType":
			var rt string
			if v := res[m.Value:m.End]; string(v) == `"complete"` {
				rt = resultComplete
			} else if json.Unmarshal(v, &rt) != nil {
				return errorResult(fmt.Sprintf("upstream MCP server %q answered a resultType that is not a string", u.srv.Name))
			}
			if rt == "input_required" {
				return errorResult(fmt.Sprintf("upstream MCP server %q asked for input, and no client can answer it on this request", u.srv.Name))
			}
			if rt != resultComplete {
				if len(rt) > 64 {
					rt = rt[:64] + "..."
				}
				return errorResult(fmt.Sprintf("upstream MCP server %q answered a result of type %q, which aiod did not ask for", u.srv.Name, rt))
			}
			drop = dropAt(drop, len(ms), i)
			changed = true
		case "_meta":
			v := res[m.Value:m.End]
			inner, ok := members(v)
			if !ok {
				continue
			}
			keep := make([]member, 0, len(inner))
			for _, im := range inner {
				if im.Key != metaServerInfo {
					keep = append(keep, im)
				}
			}
			if len(keep) == len(inner) {
				continue
			}
			changed = true
			if len(keep) == 0 {
				drop = dropAt(drop, len(ms), i) // only the envelope was there
				continue
			}
			meta, metaAt = join(v, keep), i
		}
	}
	if !changed {
		return res
	}
	out := make([]byte, 0, len(res))
	out = append(out, '{')
	first := true
	for i, m := range ms {
		if drop != nil && drop[i] {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		if i == metaAt {
			out = append(out, res[m.Start:m.Value]...) // the key and the colon
			out = append(out, meta...)
			continue
		}
		out = append(out, res[m.Start:m.End]...)
	}
	return append(out, '}')
}

func dropAt(drop []bool, n, i int) []bool {
	if drop == nil {
		drop = make([]bool, n)
	}
	drop[i] = true
	return drop
}

// member is one member of a JSON object: b[Start:End] is the member as
// written (key, colon, value), b[Value:End] its value.
type member = jsonx.Member

// join renders the members of obj as an object, each as written.
func join(obj []byte, ms []member) []byte {
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, obj[m.Start:m.End]...)
	}
	return append(out, '}')
}

// members splits a JSON object into its top-level members without decoding
// the values (jsonx.Walk). ok is false when b is not an object (or not
// valid JSON as far as the scan sees).
func members(b []byte) (ms []member, ok bool) {
	ms = make([]member, 0, 8)
	if jsonx.Walk(b, func(m member) bool { ms = append(ms, m); return true }) != nil {
		return nil, false
	}
	return ms, true
}
