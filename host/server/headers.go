package server

import (
	"strings"

	"github.com/gofiber/fiber/v2"
)

// reqHeaders adapts a /mcp request's headers to mcp.Headers. The headers
// the protocol layer and handleMCP read on every request are found in one
// pass over the request's headers (scan) instead of a Peek each, which
// normalises the name and walks every header again: the Accept, the
// protocol version, the session, the 2026-07-28 method and name, and the
// three X-Forwarded ones. Another name is Peeked. Of a header sent more
// than once, the first counts, as Peek answers.
type reqHeaders struct {
	c    *fiber.Ctx
	vals [numKnown][]byte
	seen uint16 // bit i: vals[i] was found
}

// The headers scan keeps, by their index in reqHeaders.vals, under the
// names fasthttp stores them (it normalises every name it reads:
// "MCP-Protocol-Version" is kept as "Mcp-Protocol-Version").
const (
	hAccept = iota
	hVersion
	hSession
	hMethod
	hName
	hFwdProto
	hFwdHost
	hFwdPrefix
	numKnown
)

// knownHeader is the index of a header name as fasthttp stores it, -1 for
// another.
func knownHeader(key string) int {
	switch key {
	case "Accept":
		return hAccept
	case "Mcp-Protocol-Version":
		return hVersion
	case "Mcp-Session-Id":
		return hSession
	case "Mcp-Method":
		return hMethod
	case "Mcp-Name":
		return hName
	case "X-Forwarded-Proto":
		return hFwdProto
	case "X-Forwarded-Host":
		return hFwdHost
	case "X-Forwarded-Prefix":
		return hFwdPrefix
	}
	return -1
}

// scan reads c's headers once.
func (h *reqHeaders) scan(c *fiber.Ctx) {
	h.c = c
	c.Request().Header.VisitAll(func(key, value []byte) {
		if i := knownHeader(string(key)); i >= 0 && h.seen&(1<<i) == 0 {
			h.seen |= 1 << i
			h.vals[i] = value
		}
	})
}

// peek is the raw value of name (the request's buffer: valid until the
// request ends).
func (h *reqHeaders) peek(name string) []byte {
	var i int
	switch name { // the names the protocol layer asks for
	case "Accept":
		i = hAccept
	case "MCP-Protocol-Version", "Mcp-Protocol-Version":
		i = hVersion
	case "Mcp-Session-Id":
		i = hSession
	case "Mcp-Method":
		i = hMethod
	case "Mcp-Name":
		i = hName
	default:
		return h.c.Request().Header.Peek(name)
	}
	return h.vals[i]
}

// Get copies the value out of the request's buffer, which fasthttp reuses
// once the request ends (mcp may keep a value longer: a task's). The
// values nearly every request carries are answered with constants
// instead, without a copy.
func (h *reqHeaders) Get(name string) string {
	v := h.peek(name)
	switch string(v) { // compared in place, not converted
	case "":
		return ""
	case acceptBoth:
		return acceptBoth
	case acceptBothSpaced:
		return acceptBothSpaced
	case acceptBothReversed:
		return acceptBothReversed
	case fiber.MIMEApplicationJSON:
		return fiber.MIMEApplicationJSON
	case "2025-11-25":
		return "2025-11-25"
	case "2025-06-18":
		return "2025-06-18"
	case "2026-07-28":
		return "2026-07-28"
	case "tools/call":
		return "tools/call"
	}
	return string(v)
}

// forwarded is the first value (the client's, of a list "a, b") of the
// X-Forwarded header i, trimmed.
func (h *reqHeaders) forwarded(i int) string {
	v, _, _ := strings.Cut(string(h.vals[i]), ",")
	return strings.TrimSpace(v)
}
