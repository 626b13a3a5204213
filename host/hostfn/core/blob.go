package core

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// Kept responses (spec/abi/v1.md §3, "kept responses"): a guest may keep
// the pending response of a family call on the host instead of copying it
// into its memory (response_keep), and later have the host append it to
// the call's output as the contents of a JSON string, escaped once or
// twice (output_blob). A 1 MiB file read this way never enters the guest:
// the host escapes it natively, once for structuredContent and once more
// for the text block that holds the same object as JSON text.

// maxKept bounds the responses one call may keep.
const maxKept = hostfn.MaxKept

var (
	responseKeepDef = hostfn.Def{Module: abi.ModuleCore, Name: "response_keep", Results: []hostfn.ValueType{hostfn.I64}, Fn: responseKeep}
	outputBlobDef   = hostfn.Def{Module: abi.ModuleCore, Name: "output_blob", Params: []hostfn.ValueType{hostfn.I32, hostfn.I32}, Results: []hostfn.ValueType{hostfn.I32}, Fn: outputBlob}
	bytesKeepDef    = hostfn.Def{Module: abi.ModuleCore, Name: "bytes_keep", Params: []hostfn.ValueType{hostfn.I32, hostfn.I32}, Results: []hostfn.ValueType{hostfn.I64}, Fn: bytesKeep}
)

// bytesKeep (v1.1) keeps a copy of len bytes of the guest's memory at ptr
// as a kept response, for output_blob to write escaped natively: a large
// text the guest made itself (the JSON text of its structuredContent)
// need not be escaped in the guest. It answers as response_keep does.
func bytesKeep(_ context.Context, c *hostfn.Call, mem hostfn.Memory, stack []uint64) {
	ptr, n := uint32(stack[0]), uint32(stack[1])
	b, ok := mem.Read(ptr, n)
	if !ok {
		panic(fmt.Errorf("aiod:core.bytes_keep: %d bytes at %d are outside the guest's memory", n, ptr))
	}
	if len(c.Kept) >= maxKept {
		panic(fmt.Errorf("aiod:core.bytes_keep: more than %d responses kept in one call", maxKept))
	}
	// what is kept is written at least once: refuse now what cannot fit
	if int64(len(b)) > c.MaxOutput {
		c.Overflow = true
		panic(hostfn.ErrResultTooLarge{Limit: c.MaxOutput})
	}
	h := uint64(len(c.Kept))
	k := hostfn.Kept{Bytes: append([]byte(nil), b...), UTF8: utf8.Valid(b)}
	c.Kept = append(c.Kept, k)
	if k.UTF8 {
		h |= 1 << 32
	}
	stack[0] = h
}

// responseKeep keeps the pending response for the rest of the call:
// -1 if none is pending, else its handle | 1<<32 if it is valid UTF-8.
func responseKeep(_ context.Context, c *hostfn.Call, _ hostfn.Memory, stack []uint64) {
	if c.Response == nil {
		stack[0] = ^uint64(0)
		return
	}
	if len(c.Kept) >= maxKept {
		panic(fmt.Errorf("aiod:core.response_keep: more than %d responses kept in one call", maxKept))
	}
	h := uint64(len(c.Kept))
	k := hostfn.Kept{Bytes: c.Response, UTF8: utf8.Valid(c.Response)}
	c.Kept = append(c.Kept, k)
	c.Response = nil
	if k.UTF8 {
		h |= 1 << 32
	}
	stack[0] = h
}

// outputBlob appends kept response h to the output as JSON string
// contents, escaped `escape` (1 or 2) times, or, with escape 0 (v1.2),
// a collection (JSON objects joined with commas) as it is; returns 0.
func outputBlob(_ context.Context, c *hostfn.Call, _ hostfn.Memory, stack []uint64) {
	h, escape := uint32(stack[0]), uint32(stack[1])
	if uint64(h) >= uint64(len(c.Kept)) {
		panic(fmt.Errorf("aiod:core.output_blob: no kept response %d", h))
	}
	if escape > 2 {
		panic(fmt.Errorf("aiod:core.output_blob: escape must be 0, 1 or 2, not %d", escape))
	}
	k := c.Kept[h]
	if escape == 0 {
		// only what the host checked itself is written as JSON as it is
		if k.Items == 0 {
			panic(fmt.Errorf("aiod:core.output_blob: kept response %d is not a collection of JSON objects: escape 0 is for collections only", h))
		}
		if int64(len(c.Output))+int64(len(k.Bytes)) > c.MaxOutput {
			c.Overflow = true
			panic(hostfn.ErrResultTooLarge{Limit: c.MaxOutput})
		}
		start := len(c.Output)
		if cap(c.Output)-len(c.Output) < len(k.Bytes) {
			// it is usually written again, escaped, for the text block
			c.Output = slices.Grow(c.Output, len(k.Bytes)+max(len(k.Escaped), len(k.Bytes)+len(k.Bytes)/16)+4096)
		}
		c.Output = append(c.Output, k.Bytes...)
		c.Spliced = append(c.Spliced, hostfn.Span{Start: start, End: len(c.Output), Items: k.Items})
		stack[0] = 0
		return
	}
	b := k.Bytes
	// every byte is written at least once: fail before escaping what
	// cannot fit
	if int64(len(c.Output))+int64(len(b)) > c.MaxOutput {
		c.Overflow = true
		panic(hostfn.ErrResultTooLarge{Limit: c.MaxOutput})
	}
	start := len(c.Output)
	if escape == 1 && k.Escaped != nil {
		if cap(c.Output)-len(c.Output) < len(k.Escaped) {
			// escaped ahead (a collection): room for it and for the
			// collection as it is, which usually follows
			// (structuredContent), at once: the room below was too little
			// for a stream of short events, whose escaping is a sixth
			// longer, and the output was copied again
			c.Output = slices.Grow(c.Output, len(k.Escaped)+len(b)+4096)
		}
	} else if cap(c.Output)-len(c.Output) < len(b) {
		// a kept response is usually written twice (structuredContent
		// and the text block): room for both at once
		c.Output = slices.Grow(c.Output, 2*(len(b)+len(b)/16)+1024)
	}
	if escape == 1 && k.Escaped != nil {
		c.Output = append(c.Output, k.Escaped...) // escaped ahead
	} else {
		c.Output = appendEscaped(c.Output, b, int(escape), k.UTF8)
	}
	if int64(len(c.Output)) > c.MaxOutput {
		c.Overflow = true
		panic(hostfn.ErrResultTooLarge{Limit: c.MaxOutput})
	}
	c.Spliced = append(c.Spliced, hostfn.Span{Start: start, End: len(c.Output)})
	stack[0] = 0
}

// escapes[e][c] is what byte c (ASCII) becomes escaped e times ("" for a
// byte written as is).
var escapes [3][utf8.RuneSelf]string

func init() {
	const hex = "0123456789abcdef"
	for c := 0; c < utf8.RuneSelf; c++ {
		var s string
		switch c {
		case '"', '\\':
			s = `\` + string(rune(c))
		case '\n':
			s = `\n`
		case '\r':
			s = `\r`
		case '\t':
			s = `\t`
		case '\b':
			s = `\b`
		case '\f':
			s = `\f`
		default:
			if c < 0x20 {
				s = `\u00` + string(hex[c>>4]) + string(hex[c&0xf])
			}
		}
		escapes[1][c] = s
	}
	for c := 0; c < utf8.RuneSelf; c++ {
		if s := escapes[1][c]; s != "" {
			// escaping the escape: only its backslashes and quotes change
			var t []byte
			for i := 0; i < len(s); i++ {
				if e := escapes[1][s[i]]; e != "" {
					t = append(t, e...)
				} else {
					t = append(t, s[i])
				}
			}
			escapes[2][c] = string(t)
		}
	}
}

// AppendEscaped appends b as the contents of a JSON string (no quotes),
// escaped escape times (1: a string value; 2: a string inside the JSON
// text of a string value), exactly as the Go SDK's encoder (sdk/jsonx)
// writes it: `"`, `\` and control characters only, invalid UTF-8 as
// U+FFFD.
func AppendEscaped(dst, b []byte, escape int) []byte {
	return appendEscaped(dst, b, escape, utf8.Valid(b))
}

// AppendEscapedText is AppendEscaped(dst, b, 1) for b valid UTF-8 (JSON
// text the host checked, a Machine Mode event): a quote every few bytes,
// so one pass writing each byte, a backslash before '"' and '\', is
// faster than skipping to each; a control byte (whitespace between
// tokens) sends the whole of b the general way.
func AppendEscapedText(dst, b []byte) []byte {
	n := len(dst)
	if cap(dst)-n < 2*len(b) {
		nd := make([]byte, n, max(2*cap(dst), n+2*len(b)))
		copy(nd, dst)
		dst = nd
	}
	d := dst[:n+2*len(b)]
	j := n
	for _, c := range b {
		if c < 0x20 {
			return appendEscaped(dst[:n], b, 1, true)
		}
		if c == '"' || c == '\\' {
			d[j] = '\\'
			j++
		}
		d[j] = c
		j++
	}
	return d[:j]
}

// appendEscaped is AppendEscaped for b whose UTF-8 validity is known: valid
// text skips runs of plain bytes eight at a time.
func appendEscaped(dst, b []byte, escape int, valid bool) []byte {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	tab := &escapes[escape]
	start := 0
	for i := 0; i < len(b); {
		for valid && i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			// a byte below 0x20, a '"' or a '\\' (bytes >= 0x80 are
			// plain in valid UTF-8, and masked out of the tests)
			q, bs := w^(ones*'"'), w^(ones*'\\')
			if m := ((w-ones*0x20)&^w | (q-ones)&^q | (bs-ones)&^bs) & highs; m != 0 {
				// the lowest mark is exact (a borrow only runs up from
				// a byte that is marked itself): go straight to it
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		if c < utf8.RuneSelf {
			if s := tab[c]; s != "" {
				dst = append(append(dst, b[start:i]...), s...)
				start = i + 1
			}
			i++
			continue
		}
		if valid {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(append(dst, b[start:i]...), "\ufffd"...)
			start = i + 1
		}
		i += size
	}
	return append(dst, b[start:]...)
}

// ValidObject reports whether out, a call's output whose spliced spans
// are spans, is one valid JSON object. The spans (host-escaped string
// contents, any size; or collections of checked JSON objects) are not
// scanned again: string contents stand as one plain character, which is
// valid only inside a string, where any escaped contents are valid too;
// a collection of one object stands as "true\n" and one of more as
// "true,true\n", valid exactly where one value, or values joined with
// commas, are (an array's elements), and never inside a string (a raw
// newline). The check is encoding/json's, in one pass that allocates
// nothing (jsonx.Valid: twice as fast on a large result).
func ValidObject(out []byte, spans []hostfn.Span) bool {
	if len(out) < 2 || out[0] != '{' {
		return false
	}
	if len(spans) == 0 {
		return jsonx.Valid(out)
	}
	stand := func(s hostfn.Span) string {
		switch {
		case s.Items == 0:
			return "~"
		case s.Items == 1:
			return "true\n"
		}
		return "true,true\n"
	}
	n, prev := len(out), 0
	for _, s := range spans {
		if s.Start < prev || s.End < s.Start || s.End > len(out) {
			return false
		}
		n -= s.End - s.Start - len(stand(s))
		prev = s.End
	}
	sk := make([]byte, 0, max(n, 0))
	prev = 0
	for _, s := range spans {
		sk = append(append(sk, out[prev:s.Start]...), stand(s)...)
		prev = s.End
	}
	sk = append(sk, out[prev:]...)
	return jsonx.Valid(sk)
}
