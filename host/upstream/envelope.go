package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
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
		switch string(m.key) {
		case "resultType":
			var rt string
			if v := res[m.vstart:m.end]; string(v) == `"complete"` {
				rt = resultComplete
			} else if json.Unmarshal(v, &rt) != nil {
				return errorResult(fmt.Sprintf("upstream MCP server %q answered a resultType that is not a string", u.srv.Name))
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
			v := res[m.vstart:m.end]
			inner, ok := members(v)
			if !ok {
				continue
			}
			keep := make([]member, 0, len(inner))
			for _, im := range inner {
				if string(im.key) != metaServerInfo {
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
			out = append(out, res[m.start:m.vstart]...) // the key and the colon
			out = append(out, meta...)
			continue
		}
		out = append(out, res[m.start:m.end]...)
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

// member is one member of a JSON object: b[start:end] is the member as
// written (key, colon, value), b[vstart:end] its value.
type member struct {
	key                []byte // unescaped
	start, vstart, end int
}

// join renders the members of obj as an object, each as written.
func join(obj []byte, ms []member) []byte {
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, obj[m.start:m.end]...)
	}
	return append(out, '}')
}

// members splits a JSON object into its top-level members without decoding
// the values. ok is false when b is not an object (or not valid JSON as far
// as the scan sees).
func members(b []byte) (ms []member, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	ms = make([]member, 0, 8)
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil, skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		start := i
		kend := skipString(b, i)
		if kend < 0 {
			return nil, false
		}
		key := b[i+1 : kend-1]
		if bytes.IndexByte(key, '\\') >= 0 { // an escaped key: decode it
			var k string
			if json.Unmarshal(b[i:kend], &k) != nil {
				return nil, false
			}
			key = []byte(k)
		}
		i = skipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		vstart := skipSpace(b, i+1)
		end := skipValue(b, vstart)
		if end < 0 {
			return nil, false
		}
		ms = append(ms, member{key: key, start: start, vstart: vstart, end: end})
		i = skipSpace(b, end)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return ms, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] ('"'), or
// -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				k := skipString(b, j)
				if k < 0 {
					return -1
				}
				j = k - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default: // a number, true, false, null
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}
