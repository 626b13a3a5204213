// Package wasmbin reads and writes the WebAssembly binary format, as far as
// aiod's module rewriters need it: the module header, sections (id, offset,
// size), LEB128 integers, names and vectors, limits, value types and
// imports; and the writer side, appending LEB128s and sections and patching
// a size in front of bytes already written.
//
// A Reader reads a byte slice and never past it: every read is
// bounds-checked and returns an *Error (never a panic) when the input is
// cut short or malformed. LEB128 integers are read as the wasm spec
// requires: an N-bit integer takes at most ceil(N/7) bytes (5 for a u32 or
// i32, 10 for a u64 or i64) and the unused bits of its last byte are zero
// (unsigned) or copies of the sign bit (signed); anything else is
// malformed. What the reader does not decode (the value types beyond wasm
// 2.0's, such as the GC proposal's) is reported as unsupported rather than
// malformed, so that a caller can tell "not wasm" from "not handled here".
package wasmbin

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// Header is what every module starts with: the magic "\0asm" and version 1.
const Header = "\x00asm\x01\x00\x00\x00"

// Section ids.
const (
	SecCustom    = 0
	SecType      = 1
	SecImport    = 2
	SecFunction  = 3
	SecTable     = 4
	SecMemory    = 5
	SecGlobal    = 6
	SecExport    = 7
	SecStart     = 8
	SecElement   = 9
	SecCode      = 10
	SecData      = 11
	SecDataCount = 12
	SecTag       = 13
)

// External kinds (imports and exports).
const (
	KindFunc   = 0x00
	KindTable  = 0x01
	KindMemory = 0x02
	KindGlobal = 0x03
	KindTag    = 0x04
)

var (
	// ErrMalformed is what every error for input that is not well-formed
	// wasm matches (errors.Is).
	ErrMalformed = errors.New("wasmbin: malformed")
	// ErrUnsupported is what every error for well-formed input the reader
	// does not decode matches.
	ErrUnsupported = errors.New("wasmbin: unsupported")
)

// Error is a read that failed: where (an offset in the input the Reader
// was made from) and why.
type Error struct {
	Off int
	Msg string
	// Unsupported is set when the input may be well-formed but uses
	// something the reader does not decode.
	Unsupported bool
}

func (e *Error) Error() string {
	kind := "malformed"
	if e.Unsupported {
		kind = "unsupported"
	}
	return fmt.Sprintf("wasm: %s at offset %d: %s", kind, e.Off, e.Msg)
}

// Is makes errors.Is(err, ErrMalformed) or errors.Is(err, ErrUnsupported)
// hold.
func (e *Error) Is(target error) bool {
	if e.Unsupported {
		return target == ErrUnsupported
	}
	return target == ErrMalformed
}

// Malformed returns an *Error for malformed input at off.
func Malformed(off int, format string, args ...any) *Error {
	return &Error{Off: off, Msg: fmt.Sprintf(format, args...)}
}

// Unsupported returns an *Error for input the reader does not decode.
func Unsupported(off int, format string, args ...any) *Error {
	return &Error{Off: off, Msg: fmt.Sprintf(format, args...), Unsupported: true}
}

// Section is one section of a module.
type Section struct {
	ID byte
	// Off is the offset of the id byte; Start and End bound the payload.
	Off, Start, End int
}

// Reader returns a Reader over s's payload in wasm (the module s was
// read from); its offsets are offsets in wasm.
func (s Section) Reader(wasm []byte) Reader {
	if s.Start < 0 || s.Start > s.End || s.End > len(wasm) {
		return Reader{b: wasm[:0]} // not a section of wasm: an empty reader
	}
	return Reader{b: wasm[:s.End], off: s.Start}
}

// Payload returns s's payload in wasm (nil if s is not a section of wasm).
func (s Section) Payload(wasm []byte) []byte {
	if s.Start < 0 || s.Start > s.End || s.End > len(wasm) {
		return nil
	}
	return wasm[s.Start:s.End]
}

// CheckHeader checks that wasm starts with Header.
func CheckHeader(wasm []byte) error {
	if len(wasm) < len(Header) {
		return Malformed(0, "truncated header")
	}
	for i := range len(Header) {
		if wasm[i] != Header[i] {
			return Malformed(i, "bad magic or version")
		}
	}
	return nil
}

// Sections checks the header and splits the rest of wasm into sections,
// each of which must fit in the input. It checks neither the ids nor their
// order.
func Sections(wasm []byte) ([]Section, error) {
	if err := CheckHeader(wasm); err != nil {
		return nil, err
	}
	var secs []Section
	r := NewReader(wasm)
	r.off = len(Header)
	for !r.Done() {
		off := r.off
		id, _ := r.Byte()
		size, err := r.U32()
		if err != nil {
			return nil, err
		}
		if uint64(size) > uint64(r.Len()) {
			return nil, Malformed(off, "section %d size %d exceeds the input", id, size)
		}
		secs = append(secs, Section{ID: id, Off: off, Start: r.off, End: r.off + int(size)})
		r.off += int(size)
	}
	return secs, nil
}

// Reader reads wasm from a byte slice, never past its end. The zero Reader
// reads nothing. A Reader is a small value: copy it to read ahead.
type Reader struct {
	b   []byte // the input, cut where this reader must stop
	off int    // the next byte to read
}

// NewReader returns a Reader of b from its first byte.
func NewReader(b []byte) Reader { return Reader{b: b} }

// Off is the offset of the next byte to read.
func (r *Reader) Off() int { return r.off }

// Len is the number of bytes left.
func (r *Reader) Len() int { return len(r.b) - r.off }

// Done reports whether every byte was read.
func (r *Reader) Done() bool { return r.off >= len(r.b) }

// Rest returns the bytes left, without reading them.
func (r *Reader) Rest() []byte { return r.b[r.off:] }

// Since returns the bytes from offset start to the next one to read (nil if
// start is not between the reader's first byte and the next one).
func (r *Reader) Since(start int) []byte {
	if start < 0 || start > r.off {
		return nil
	}
	return r.b[start:r.off]
}

// Sub reads the next n bytes as a Reader of their own (offsets stay those
// of r's input).
func (r *Reader) Sub(n uint32) (Reader, error) {
	if uint64(n) > uint64(r.Len()) {
		return Reader{}, r.short(n)
	}
	s := Reader{b: r.b[:r.off+int(n)], off: r.off}
	r.off += int(n)
	return s, nil
}

// Expect fails unless every byte was read: what names the region in the
// error ("code section").
func (r *Reader) Expect(what string) error {
	if r.off != len(r.b) {
		return Malformed(r.off, "%s has %d trailing bytes", what, len(r.b)-r.off)
	}
	return nil
}

// Byte reads one byte.
func (r *Reader) Byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, r.eof()
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

// Peek returns the next byte without reading it; ok is false at the end.
func (r *Reader) Peek() (c byte, ok bool) {
	if r.off >= len(r.b) {
		return 0, false
	}
	return r.b[r.off], true
}

// Bytes reads n bytes (a slice of the input, not a copy).
func (r *Reader) Bytes(n uint32) ([]byte, error) {
	if uint64(n) > uint64(r.Len()) {
		return nil, r.short(n)
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

// ByteVec reads a vector of bytes (a u32 length, then the bytes): a data
// segment's contents.
func (r *Reader) ByteVec() ([]byte, error) {
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	return r.Bytes(n)
}

// Name reads a name: a vector of bytes that must be UTF-8.
func (r *Reader) Name() ([]byte, error) {
	off := r.off
	b, err := r.ByteVec()
	if err == nil && !utf8.Valid(b) {
		return nil, Malformed(off, "name is not UTF-8")
	}
	return b, err
}

// VecLen reads the length of a vector. Every entry of a wasm vector takes
// at least a byte, so a length beyond the bytes left is malformed: a
// caller can allocate for the length it gets.
func (r *Reader) VecLen() (uint32, error) {
	off := r.off
	n, err := r.U32()
	if err == nil && uint64(n) > uint64(r.Len()) {
		return 0, Malformed(off, "vector of %d entries in %d bytes", n, r.Len())
	}
	return n, err
}

// U32 reads an unsigned LEB128 of at most 32 bits (5 bytes).
func (r *Reader) U32() (uint32, error) {
	if r.off < len(r.b) && r.b[r.off] < 0x80 { // one byte: most of them
		c := r.b[r.off]
		r.off++
		return uint32(c), nil
	}
	v, err := r.leb(32, false)
	return uint32(v), err
}

// I32 reads a signed LEB128 of at most 32 bits (5 bytes).
func (r *Reader) I32() (int32, error) {
	v, err := r.leb(32, true)
	return int32(v), err
}

// S33 reads a signed LEB128 of at most 33 bits (5 bytes): a block type's
// type index.
func (r *Reader) S33() (int64, error) {
	v, err := r.leb(33, true)
	return int64(v), err
}

// U64 reads an unsigned LEB128 of at most 64 bits (10 bytes).
func (r *Reader) U64() (uint64, error) { return r.leb(64, false) }

// I64 reads a signed LEB128 of at most 64 bits (10 bytes).
func (r *Reader) I64() (int64, error) {
	v, err := r.leb(64, true)
	return int64(v), err
}

// leb decodes an LEB128 number of at most bits bits (at most 64), rejecting
// encodings that are too long or whose unused bits are not zero (unsigned)
// or the sign (signed). A signed result is sign-extended to 64 bits.
func (r *Reader) leb(bits uint, signed bool) (uint64, error) {
	start := r.off
	maxBytes := int((bits + 6) / 7)
	used := bits - 7*uint(maxBytes-1) // value bits in the last byte
	var v uint64
	var shift uint
	for i := 0; ; i++ {
		if r.off >= len(r.b) {
			return 0, r.eof()
		}
		c := r.b[r.off]
		r.off++
		if i == maxBytes-1 {
			if c&0x80 != 0 {
				return 0, Malformed(start, "LEB128 longer than %d bytes", maxBytes)
			}
			rest := (c & 0x7F) >> (used - 1) // the sign bit and the unused bits
			if signed {
				if rest != 0 && rest != 0x7F>>(used-1) {
					return 0, Malformed(start, "LEB128 overflows %d bits", bits)
				}
			} else if rest>>1 != 0 {
				return 0, Malformed(start, "LEB128 overflows %d bits", bits)
			}
		}
		v |= uint64(c&0x7F) << shift
		shift += 7
		if c&0x80 == 0 {
			if signed && shift < 64 && c&0x40 != 0 {
				v |= ^uint64(0) << shift
			}
			return v, nil
		}
	}
}

// ValType reads a value type of wasm 2.0: i32 i64 f32 f64 v128 funcref
// externref (one byte each). Any other byte is unsupported: the GC
// proposal's reference types, some of them several bytes long, are not
// decoded.
func (r *Reader) ValType() (byte, error) {
	off := r.off
	b, err := r.Byte()
	if err != nil {
		return 0, err
	}
	if IsValType(b) {
		return b, nil
	}
	return 0, Unsupported(off, "value type %#x", b)
}

// IsValType reports whether b is a value type ValType reads.
func IsValType(b byte) bool {
	switch b {
	case 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
		return true
	}
	return false
}

// Limits are a table's or a memory's bounds.
type Limits struct {
	// Flags: 0x01 a maximum is given, 0x02 shared, 0x04 64-bit bounds.
	Flags    byte
	Min, Max uint64 // Max is 0 without a maximum
}

// Limits reads table or memory limits: flags, the minimum and, when flags
// says so, the maximum (u64s when flag 0x04 is set, u32s otherwise).
func (r *Reader) Limits() (Limits, error) {
	off := r.off
	var l Limits
	flags, err := r.Byte()
	if err != nil {
		return l, err
	}
	if flags > 0x07 {
		return l, Malformed(off, "limits flags %#x", flags)
	}
	l.Flags = flags
	bits := uint(32)
	if flags&0x04 != 0 {
		bits = 64
	}
	if l.Min, err = r.leb(bits, false); err != nil {
		return l, err
	}
	if flags&0x01 != 0 {
		l.Max, err = r.leb(bits, false)
	}
	return l, err
}

// Import is one entry of the import section.
type Import struct {
	Module, Name []byte
	Kind         byte
	KindOff      int    // the offset of Kind
	Index        uint32 // KindFunc, KindTag: the type index
	Type         byte   // KindTable: the reference type; KindGlobal: the value type
	Mutable      bool   // KindGlobal
	Limits       Limits // KindTable, KindMemory
}

// Imports reads an import section's vector of imports.
func (r *Reader) Imports() ([]Import, error) {
	n, err := r.VecLen()
	if err != nil {
		return nil, err
	}
	var imps []Import // grown as imports are read: n is bounded by the bytes, not by what they hold
	for range n {
		imp, err := r.Import()
		if err != nil {
			return nil, err
		}
		imps = append(imps, imp)
	}
	return imps, nil
}

// Import reads an import: module and field names, kind and description.
func (r *Reader) Import() (Import, error) {
	var imp Import
	var err error
	if imp.Module, err = r.Name(); err != nil {
		return imp, err
	}
	if imp.Name, err = r.Name(); err != nil {
		return imp, err
	}
	imp.KindOff = r.off
	if imp.Kind, err = r.Byte(); err != nil {
		return imp, err
	}
	switch imp.Kind {
	case KindFunc:
		imp.Index, err = r.U32()
	case KindTable:
		if imp.Type, err = r.ValType(); err == nil {
			imp.Limits, err = r.Limits()
		}
	case KindMemory:
		imp.Limits, err = r.Limits()
	case KindGlobal:
		if imp.Type, err = r.ValType(); err != nil {
			return imp, err
		}
		off := r.off
		var m byte
		if m, err = r.Byte(); err == nil && m > 1 {
			err = Malformed(off, "global mutability %#x", m)
		}
		imp.Mutable = m == 1
	case KindTag: // exception handling: attribute 0, type index
		off := r.off
		var a byte
		if a, err = r.Byte(); err == nil && a != 0 {
			err = Malformed(off, "tag attribute %#x", a)
		}
		if err == nil {
			imp.Index, err = r.U32()
		}
	default:
		err = Malformed(imp.KindOff, "unknown import kind %#x", imp.Kind)
	}
	return imp, err
}

func (r *Reader) eof() *Error { return Malformed(r.off, "unexpected end") }

func (r *Reader) short(n uint32) *Error {
	return Malformed(r.off, "%d bytes past the end", uint64(n)-uint64(r.Len()))
}

// Writing.

// AppendU32 appends v as an unsigned LEB128 (the shortest encoding).
func AppendU32(b []byte, v uint32) []byte { return AppendU64(b, uint64(v)) }

// AppendU64 appends v as an unsigned LEB128 (the shortest encoding).
func AppendU64(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// AppendI32 appends v as a signed LEB128 (the shortest encoding).
func AppendI32(b []byte, v int32) []byte { return AppendI64(b, int64(v)) }

// AppendI64 appends v as a signed LEB128 (the shortest encoding).
func AppendI64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// AppendSection appends a section: its id, the payload's size and the
// payload. It fails if the payload is larger than a u32 can say.
func AppendSection(b []byte, id byte, payload []byte) ([]byte, error) {
	if uint64(len(payload)) > math.MaxUint32 {
		return b, Unsupported(len(b), "section %d of %d bytes", id, len(payload))
	}
	b = append(b, id)
	b = AppendU32(b, uint32(len(payload)))
	return append(b, payload...), nil
}

// BeginSize appends a placeholder for the size of what is appended after
// it and returns where it is, for EndSize.
func BeginSize(b []byte) ([]byte, int) { return append(b, 0), len(b) }

// EndSize writes the size of what b holds after the placeholder at at (from
// BeginSize) into it, moving those bytes when the size takes more than the
// placeholder's byte. It fails if the size is larger than a u32 can say
// or at is not a placeholder's place.
func EndSize(b []byte, at int) ([]byte, error) {
	if at < 0 || at >= len(b) {
		return b, Malformed(at, "no size placeholder at %d", at)
	}
	n := len(b) - at - 1
	if uint64(n) > math.MaxUint32 {
		return b, Unsupported(at, "%d bytes behind a u32 size", n)
	}
	if n < 0x80 {
		b[at] = byte(n)
		return b, nil
	}
	var enc [5]byte
	k := len(AppendU32(enc[:0], uint32(n)))
	b = append(b, enc[1:k]...) // grow by k-1 bytes
	copy(b[at+k:], b[at+1:at+1+n])
	copy(b[at:], enc[:k])
	return b, nil
}
