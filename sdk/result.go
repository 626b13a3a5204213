package sdk

import (
	"encoding/base64"
	"encoding/json"
	"slices"

	"github.com/aiodhq/aiod/sdk/internal/guest"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// Result is a tool's answer: MCP's CallToolResult.
type Result struct {
	Content []Content
	// Structured, when not nil, is sent as structuredContent.
	Structured any
	IsError    bool
	// one backs Content for the one-block constructors: one allocation
	// instead of two (an allocation costs about 2 µs in wasm).
	one [1]Content
}

func oneBlock(c Content, isError bool) *Result {
	r := &Result{IsError: isError}
	r.one[0] = c
	r.Content = r.one[:]
	return r
}

// Content is one content block. Use the constructors.
type Content struct {
	typ      string
	text     string
	data     []byte
	mimeType string
	uri      string
	// json: text is JSON from JSONResult, which may hold kept responses
	// (sdk/files.Text) for the host to write
	json bool
	// kept, when not nil, is the text, kept on the host (RawJSONResult)
	kept *guest.Blob
}

// Text is a text content block.
func Text(s string) Content { return Content{typ: "text", text: s} }

// Image is an image content block (data is raw bytes; sent base64).
func Image(data []byte, mimeType string) Content {
	return Content{typ: "image", data: data, mimeType: mimeType}
}

// Audio is an audio content block.
func Audio(data []byte, mimeType string) Content {
	return Content{typ: "audio", data: data, mimeType: mimeType}
}

// TextResource is an embedded text resource.
func TextResource(uri, mimeType, text string) Content {
	return Content{typ: "resource", uri: uri, mimeType: mimeType, text: text}
}

// BlobResource is an embedded binary resource.
func BlobResource(uri, mimeType string, data []byte) Content {
	return Content{typ: "resource", uri: uri, mimeType: mimeType, data: data}
}

// ResourceLink is a link to a resource.
func ResourceLink(uri, name, mimeType string) Content {
	return Content{typ: "resource_link", uri: uri, text: name, mimeType: mimeType}
}

// TextResult is a result with one text block.
func TextResult(s string) *Result { return oneBlock(Text(s), false) }

// ErrorResult is an isError result with one text block.
func ErrorResult(msg string) *Result { return oneBlock(Text(msg), true) }

// JSONResult is a result whose text is v as compact JSON (maps with sorted
// keys, as aiod emits; see package jsonx) and whose structuredContent is
// the same object.
func JSONResult(v any, isError bool) *Result {
	b := jsonx.Marshal(v)
	r := oneBlock(Content{typ: "text", text: string(b), json: true}, isError)
	r.Structured = json.RawMessage(b)
	return r
}

// RawJSONResult is a result whose structuredContent is raw, one JSON
// object written as it is (the host checks the whole result, as always),
// and whose one text block holds the same JSON text, escaped by the host
// natively instead of by the guest (aiod:core.bytes_keep, ABI v1.1): for
// a large object, escaping it in wasm costs more than building it. raw
// must not hold kept responses (sdk/files.Text) and must not change until
// the call returns.
func RawJSONResult(raw []byte, isError bool) *Result {
	r := oneBlock(Content{typ: "text", kept: guest.KeepBytes(raw)}, isError)
	r.Structured = json.RawMessage(raw)
	return r
}

var out []byte

func writeResult(r *Result) {
	b := appendResult(out[:0], r)
	out = b
	if guest.Splicing() {
		guest.WriteSpliced(b)
	} else {
		guest.WriteOutput(b)
	}
	if cap(out) > 1<<20 {
		out = nil // do not pin large buffers in a pooled instance
	}
}

func appendResult(b []byte, r *Result) []byte {
	// room for the whole result at once: a large text (escaped, mostly a
	// little longer) beside its structured copy would otherwise grow the
	// buffer a dozen times
	n := 64
	for i := range r.Content {
		n += len(r.Content[i].text) + len(r.Content[i].text)/8 + len(r.Content[i].data)*4/3 + 64
	}
	if s, ok := r.Structured.(json.RawMessage); ok {
		n += len(s)
	}
	b = slices.Grow(b, n)
	b = append(b, `{"content":[`...)
	for i := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendContent(b, &r.Content[i])
	}
	b = append(b, ']')
	if r.Structured != nil {
		b = append(b, `,"structuredContent":`...)
		b = jsonx.Append(b, r.Structured)
	}
	if r.IsError {
		b = append(b, `,"isError":true}`...)
	} else {
		b = append(b, `,"isError":false}`...)
	}
	return b
}

func appendContent(b []byte, c *Content) []byte {
	switch c.typ {
	case "text":
		b = append(b, `{"type":"text","text":`...)
		if c.kept != nil {
			b = c.kept.AppendJSON(b)
		} else if c.json && guest.Splicing() {
			b = guest.AppendJSONText(b, c.text)
		} else {
			b = jsonx.AppendString(b, c.text)
		}
	case "image", "audio":
		b = append(b, `{"type":"`...)
		b = append(b, c.typ...)
		b = append(b, `","data":"`...)
		b = base64.StdEncoding.AppendEncode(b, c.data)
		b = append(b, `","mimeType":`...)
		b = jsonx.AppendString(b, c.mimeType)
	case "resource":
		b = append(b, `{"type":"resource","resource":{"uri":`...)
		b = jsonx.AppendString(b, c.uri)
		if c.mimeType != "" {
			b = append(b, `,"mimeType":`...)
			b = jsonx.AppendString(b, c.mimeType)
		}
		if c.data != nil {
			b = append(b, `,"blob":"`...)
			b = base64.StdEncoding.AppendEncode(b, c.data)
			b = append(b, '"')
		} else {
			b = append(b, `,"text":`...)
			b = jsonx.AppendString(b, c.text)
		}
		b = append(b, '}')
	case "resource_link":
		b = append(b, `{"type":"resource_link","uri":`...)
		b = jsonx.AppendString(b, c.uri)
		b = append(b, `,"name":`...)
		b = jsonx.AppendString(b, c.text)
		if c.mimeType != "" {
			b = append(b, `,"mimeType":`...)
			b = jsonx.AppendString(b, c.mimeType)
		}
	default:
		b = append(b, `{"type":"text","text":""`...)
	}
	return append(b, '}')
}
