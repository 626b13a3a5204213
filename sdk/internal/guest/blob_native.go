//go:build !wasip1

package guest

import "unicode/utf8"

// Natively the fake host answered with the bytes already: the guest
// keeps them itself and escapes them as the host would.
var nativeKept [][]byte

// KeepBytes keeps a copy of b as a Blob.
func KeepBytes(b []byte) *Blob { return KeepNative(append([]byte(nil), b...)) }

// KeepNative keeps resp, a successful response, as a Blob.
func KeepNative(resp []byte) *Blob {
	if len(resp) == 0 {
		return &Blob{utf8: true, gen: gen}
	}
	kept++
	nativeKept = append(nativeKept, resp)
	return &Blob{h: uint32(len(nativeKept) - 1), n: len(resp), utf8: utf8.Valid(resp), gen: gen}
}

func writeBlob(h, level uint32) {
	if int(h) >= len(nativeKept) {
		panic("aiod sdk: no kept response")
	}
	b := appendContents(nil, string(nativeKept[h]))
	if level == 2 {
		b = appendContents(nil, string(b))
	}
	WriteOutput(b)
}

func resetNative() { nativeKept = nil }
