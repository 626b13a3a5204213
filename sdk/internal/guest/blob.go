package guest

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/aiodhq/aiod/sdk/jsonx"
)

// Kept responses (spec/abi/v1.md §3): a family call's response left on
// the host (aiod:core.response_keep) and written into the call's output
// by the host (aiod:core.output_blob), escaped as JSON string contents,
// so that a large file read never enters the guest's memory.
//
// In the result JSON the SDK builds, a kept response stands as a marker
// that valid JSON cannot contain: NUL, the escape level ('1' for a string
// value, '2' for a string inside the JSON text of a text block; '0' for a
// collection written as it is, ABI v1.2), the handle in decimal, NUL.
// WriteSpliced replaces the markers as it writes.

// Blob is a response kept on the host for the rest of the call that made
// it. It appends itself to JSON (jsonx.Appender) as a string.
type Blob struct {
	h    uint32
	n    int
	utf8 bool
	gen  uint64
}

var (
	kept int    // blobs kept in this call
	gen  uint64 // the call's number, for blobs that outlive their call
)

// ResetBlobs starts a call: blobs of earlier calls are gone.
func ResetBlobs() {
	if kept > 0 {
		resetNative()
	}
	kept = 0
	gen++
}

// Splicing reports whether this call kept a blob, so that its result
// may hold markers.
func Splicing() bool { return kept > 0 }

// Len is the blob's length in bytes.
func (b *Blob) Len() int { return b.n }

// ValidUTF8 reports whether the blob is valid UTF-8 (else its invalid
// bytes are written as U+FFFD, as for any string).
func (b *Blob) ValidUTF8() bool { return b.utf8 }

// AppendJSON appends the blob as a JSON string: its marker, or "" when
// it is empty.
func (b *Blob) AppendJSON(dst []byte) []byte {
	if b.n == 0 {
		return append(dst, `""`...)
	}
	if b.gen != gen {
		panic("aiod sdk: a kept response (files.Text) was used after the call that read it")
	}
	dst = append(dst, '"', 0, '1')
	dst = strconv.AppendUint(dst, uint64(b.h), 10)
	return append(dst, 0, '"')
}

// AppendRaw appends the blob, a collection of JSON objects joined with
// commas (sdk/process Collection), as it is: its marker of level 0, or
// nothing when it is empty.
func (b *Blob) AppendRaw(dst []byte) []byte {
	if b.n == 0 {
		return dst
	}
	if b.gen != gen {
		panic("aiod sdk: a collection was used after the call that kept it")
	}
	dst = append(dst, 0, '0')
	dst = strconv.AppendUint(dst, uint64(b.h), 10)
	return append(dst, 0)
}

// AppendJSONText appends s, JSON that may hold markers, as a JSON string:
// as jsonx.AppendString would, each marker carried through one escape
// level deeper.
func AppendJSONText(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for {
		i, h, level, next := nextMarker(s)
		if i < 0 || level > 1 {
			dst = appendContents(dst, s)
			return append(dst, '"')
		}
		dst = appendContents(dst, s[:i])
		dst = append(dst, 0, byte('1'+level))
		dst = strconv.AppendUint(dst, uint64(h), 10)
		dst = append(dst, 0)
		s = s[next:]
	}
}

// appendContents appends s escaped as jsonx does, without the quotes.
func appendContents(dst []byte, s string) []byte {
	n := len(dst)
	dst = jsonx.AppendString(dst, s)
	copy(dst[n:], dst[n+1:len(dst)-1])
	return dst[:len(dst)-2]
}

// WriteSpliced writes b, a result that may hold markers, to the call's
// output: the bytes around the markers as they are, each marker's blob
// by the host. Anything that is not a whole marker is written as is.
func WriteSpliced(b []byte) {
	for len(b) > 0 {
		i, h, level, next := nextMarker(b)
		if i < 0 {
			WriteOutput(b)
			return
		}
		WriteOutput(b[:i])
		writeBlob(h, level)
		b = b[next:]
	}
}

// nextMarker finds the first whole marker in b: its start, handle, level
// and the index after it; i is -1 if there is none.
func nextMarker[T string | []byte](b T) (i int, h uint32, level uint32, next int) {
	for k := 0; k+3 < len(b); k++ {
		// jump to the next NUL (a large result has none but the
		// markers'): a scan the runtime does faster than this loop
		z := indexNUL(b[k:])
		if z < 0 {
			break
		}
		if k += z; k+3 >= len(b) {
			break
		}
		if b[k+1] < '0' || b[k+1] > '2' {
			continue
		}
		var n uint64
		j := k + 2
		for ; j < len(b) && b[j] >= '0' && b[j] <= '9' && n < 1<<32; j++ {
			n = n*10 + uint64(b[j]-'0')
		}
		if j == k+2 || j >= len(b) || b[j] != 0 || n >= 1<<32 {
			continue
		}
		return k, uint32(n), uint32(b[k+1] - '0'), j + 1
	}
	return -1, 0, 0, 0
}

func indexNUL[T string | []byte](b T) int {
	switch x := any(b).(type) {
	case string:
		return strings.IndexByte(x, 0)
	case []byte:
		return bytes.IndexByte(x, 0)
	}
	return -1
}
