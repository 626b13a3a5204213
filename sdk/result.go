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
	// one backs Content for the one-block constructors, whose Results
	// come from a slab (slab.go): no allocation for the block.
	one [1]Content
}

func oneBlock(c Content, isError bool) *Result {
	r := newResult()
	r.IsError = isError
	r.one[0] = c
	r.Content = r.one[:]
	return r
}

// Content is one content block. Use the constructors.
//
// A text block, nearly every block, is its kind and its text: the fields
// of the other kinds are behind more, so that a result with one text
// block is small (the guest's collector marks every byte allocated).
type Content struct {
	text string
	// kept, when not nil, is the text, kept on the host (RawJSONResult)
	kept *guest.Blob
	more *moreContent
	kind contentKind
	// json: text is JSON from JSONResult, which may hold kept responses
	// (sdk/files.Text) for the host to write
	json bool
}

// moreContent is what a block of another kind than text has.
type moreContent struct {
	data     []byte
	mimeType string
	uri      string
}

type contentKind uint8

// The kinds of block; the zero Content is written as an empty text.
const (
	kindNone contentKind = iota
	kindText
	kindImage
	kindAudio
	kindResource
	kindResourceLink
)

// Text is a text content block.
func Text(s string) Content { return Content{kind: kindText, text: s} }

// Image is an image content block (data is raw bytes; sent base64).
func Image(data []byte, mimeType string) Content {
	return Content{kind: kindImage, more: &moreContent{data: data, mimeType: mimeType}}
}

// Audio is an audio content block.
func Audio(data []byte, mimeType string) Content {
	return Content{kind: kindAudio, more: &moreContent{data: data, mimeType: mimeType}}
}

// TextResource is an embedded text resource.
func TextResource(uri, mimeType, text string) Content {
	return Content{kind: kindResource, more: &moreContent{uri: uri, mimeType: mimeType}, text: text}
}

// BlobResource is an embedded binary resource.
func BlobResource(uri, mimeType string, data []byte) Content {
	return Content{kind: kindResource, more: &moreContent{uri: uri, mimeType: mimeType, data: data}}
}

// ResourceLink is a link to a resource.
func ResourceLink(uri, name, mimeType string) Content {
	return Content{kind: kindResourceLink, more: &moreContent{uri: uri, mimeType: mimeType}, text: name}
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
	r := oneBlock(Content{kind: kindText, text: string(b), json: true}, isError)
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
	r := oneBlock(Content{kind: kindText, kept: guest.KeepBytes(raw)}, isError)
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
	if len(r.Content) == 1 && r.Structured == nil {
		if c := &r.Content[0]; c.kind == kindText && c.kept == nil && !c.json {
			// one text block, most results: three appends
			b = slices.Grow(b, 64+len(c.text)+len(c.text)/8)
			b = append(b, `{"content":[{"type":"text","text":`...)
			b = jsonx.AppendString(b, c.text)
			if r.IsError {
				return append(b, `}],"isError":true}`...)
			}
			return append(b, `}],"isError":false}`...)
		}
	}
	// room for the whole result at once: a large text (escaped, mostly a
	// little longer) beside its structured copy would otherwise grow the
	// buffer a dozen times
	n := 64
	for i := range r.Content {
		c := &r.Content[i]
		n += len(c.text) + len(c.text)/8 + 64
		if c.more != nil {
			n += len(c.more.data)*4/3 + len(c.more.uri) + len(c.more.mimeType)
		}
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
	m := c.more
	if m == nil {
		m = &moreContent{}
	}
	switch c.kind {
	case kindText:
		b = append(b, `{"type":"text","text":`...)
		if c.kept != nil {
			b = c.kept.AppendJSON(b)
		} else if c.json && guest.Splicing() {
			b = guest.AppendJSONText(b, c.text)
		} else {
			b = jsonx.AppendString(b, c.text)
		}
	case kindImage, kindAudio:
		if c.kind == kindImage {
			b = append(b, `{"type":"image","data":"`...)
		} else {
			b = append(b, `{"type":"audio","data":"`...)
		}
		b = base64.StdEncoding.AppendEncode(b, m.data)
		b = append(b, `","mimeType":`...)
		b = jsonx.AppendString(b, m.mimeType)
	case kindResource:
		b = append(b, `{"type":"resource","resource":{"uri":`...)
		b = jsonx.AppendString(b, m.uri)
		if m.mimeType != "" {
			b = append(b, `,"mimeType":`...)
			b = jsonx.AppendString(b, m.mimeType)
		}
		if m.data != nil {
			b = append(b, `,"blob":"`...)
			b = base64.StdEncoding.AppendEncode(b, m.data)
			b = append(b, '"')
		} else {
			b = append(b, `,"text":`...)
			b = jsonx.AppendString(b, c.text)
		}
		b = append(b, '}')
	case kindResourceLink:
		b = append(b, `{"type":"resource_link","uri":`...)
		b = jsonx.AppendString(b, m.uri)
		b = append(b, `,"name":`...)
		b = jsonx.AppendString(b, c.text)
		if m.mimeType != "" {
			b = append(b, `,"mimeType":`...)
			b = jsonx.AppendString(b, m.mimeType)
		}
	default:
		b = append(b, `{"type":"text","text":""`...)
	}
	return append(b, '}')
}
