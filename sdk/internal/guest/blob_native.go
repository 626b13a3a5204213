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

// KeptByHost is a response a family call kept on the host itself (the
// process family's collection, ABI v1.2) as a Blob: natively, the fake
// host (sdk/sdktest) hands its bytes over, and the guest keeps them.
func KeptByHost(h uint32, n int) *Blob {
	if n == 0 {
		return &Blob{utf8: true, gen: gen}
	}
	kh, ok := host().(interface{ KeptBytes(h uint32) []byte })
	if !ok {
		panic("aiod sdk: this native host keeps no responses")
	}
	return KeepNative(append([]byte(nil), kh.KeptBytes(h)...))
}

func writeBlob(h, level uint32) {
	if int(h) >= len(nativeKept) {
		panic("aiod sdk: no kept response")
	}
	if level == 0 {
		WriteOutput(nativeKept[h])
		return
	}
	b := appendContents(nil, string(nativeKept[h]))
	if level == 2 {
		b = appendContents(nil, string(b))
	}
	WriteOutput(b)
}

func resetNative() { nativeKept = nil }
