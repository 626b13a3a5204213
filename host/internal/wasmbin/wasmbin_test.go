package wasmbin_test

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"testing"

	"github.com/aiodhq/aiod/host/internal/wasmbin"
)

// kinds are the LEB128 readers and what they decode.
var kinds = []struct {
	name   string
	bits   uint
	signed bool
	read   func(r *wasmbin.Reader) (*big.Int, error)
	write  func(b []byte, v *big.Int) []byte
}{
	{"u32", 32, false,
		func(r *wasmbin.Reader) (*big.Int, error) {
			v, err := r.U32()
			return new(big.Int).SetUint64(uint64(v)), err
		},
		func(b []byte, v *big.Int) []byte { return wasmbin.AppendU32(b, uint32(v.Uint64())) }},
	{"i32", 32, true,
		func(r *wasmbin.Reader) (*big.Int, error) { v, err := r.I32(); return big.NewInt(int64(v)), err },
		func(b []byte, v *big.Int) []byte { return wasmbin.AppendI32(b, int32(v.Int64())) }},
	{"s33", 33, true,
		func(r *wasmbin.Reader) (*big.Int, error) { v, err := r.S33(); return big.NewInt(v), err },
		func(b []byte, v *big.Int) []byte { return wasmbin.AppendI64(b, v.Int64()) }},
	{"u64", 64, false,
		func(r *wasmbin.Reader) (*big.Int, error) { v, err := r.U64(); return new(big.Int).SetUint64(v), err },
		func(b []byte, v *big.Int) []byte { return wasmbin.AppendU64(b, v.Uint64()) }},
	{"i64", 64, true,
		func(r *wasmbin.Reader) (*big.Int, error) { v, err := r.I64(); return big.NewInt(v), err },
		func(b []byte, v *big.Int) []byte { return wasmbin.AppendI64(b, v.Int64()) }},
}

// refLEB decodes an LEB128 the way the spec defines it, independently of
// the package: at most ceil(bits/7) bytes, and the value (the last byte's
// bit 6 extending the sign, for a signed one) within bits bits. n is the
// bytes it takes; ok is false for an encoding the spec rejects.
func refLEB(b []byte, bits uint, signed bool) (v *big.Int, n int, ok bool) {
	maxBytes := int((bits + 6) / 7)
	v = new(big.Int)
	for i := 0; i < maxBytes && i < len(b); i++ {
		c := b[i]
		v.Or(v, new(big.Int).Lsh(big.NewInt(int64(c&0x7F)), uint(7*i)))
		if c&0x80 != 0 {
			continue
		}
		n = i + 1
		if signed && c&0x40 != 0 {
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(7*n)))
		}
		lo, hi := big.NewInt(0), new(big.Int).Lsh(big.NewInt(1), bits) // [lo, hi)
		if signed {
			lo.Neg(new(big.Int).Lsh(big.NewInt(1), bits-1))
			hi.Lsh(big.NewInt(1), bits-1)
		}
		return v, n, v.Cmp(lo) >= 0 && v.Cmp(hi) < 0
	}
	return nil, 0, false
}

func TestLEB(t *testing.T) {
	for _, tc := range []struct {
		kind string
		in   []byte
		want int64 // ignored when bad
		bad  bool
	}{
		{"u32", []byte{0x00}, 0, false},
		{"u32", []byte{0x7F}, 127, false},
		{"u32", []byte{0x80, 0x01}, 128, false},
		{"u32", []byte{0x80, 0x80, 0x80, 0x80, 0x00}, 0, false}, // padded to 5 bytes: allowed
		{"u32", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x0F}, math.MaxUint32, false},
		{"u32", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x1F}, 0, true},       // bit 32 set
		{"u32", []byte{0x80, 0x80, 0x80, 0x80, 0x70}, 0, true},       // unused bits set
		{"u32", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, true}, // 6 bytes
		{"u32", []byte{0x80}, 0, true},                               // unterminated
		{"u32", nil, 0, true},
		{"i32", []byte{0x7F}, -1, false},
		{"i32", []byte{0x3F}, 63, false},
		{"i32", []byte{0xC0, 0x00}, 64, false},
		{"i32", []byte{0x80, 0x80, 0x80, 0x80, 0x78}, math.MinInt32, false},
		{"i32", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x07}, math.MaxInt32, false},
		{"i32", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x7F}, -1, false}, // padded -1
		{"i32", []byte{0x80, 0x80, 0x80, 0x80, 0x08}, 0, true},   // 1<<31: unused bits not the sign
		{"i32", []byte{0x80, 0x80, 0x80, 0x80, 0x40}, 0, true},
		{"i32", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x77}, 0, true},
		{"i32", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, true},
		{"s33", []byte{0x80, 0x80, 0x80, 0x80, 0x0F}, 0xF << 28, false},
		{"s33", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x0F}, 1<<32 - 1, false},
		{"s33", []byte{0x80, 0x80, 0x80, 0x80, 0x70}, -1 << 32, false},
		{"s33", []byte{0x80, 0x80, 0x80, 0x80, 0x10}, 0, true}, // 1<<32 as a positive: overflows
		{"s33", []byte{0x80, 0x80, 0x80, 0x80, 0x60}, 0, true},
		{"u64", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, -1, false}, // MaxUint64 as int64
		{"u64", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02}, 0, true},
		{"u64", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, true},
		{"i64", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7F}, math.MinInt64, false},
		{"i64", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00}, math.MaxInt64, false},
		{"i64", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 0, true},
		{"i64", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7E}, 0, true},
	} {
		var got int64
		var err error
		r := wasmbin.NewReader(tc.in)
		switch tc.kind {
		case "u32":
			var v uint32
			v, err = r.U32()
			got = int64(v)
		case "i32":
			var v int32
			v, err = r.I32()
			got = int64(v)
		case "s33":
			got, err = r.S33()
		case "u64":
			var v uint64
			v, err = r.U64()
			got = int64(v)
		case "i64":
			got, err = r.I64()
		}
		if tc.bad {
			if err == nil || !errors.Is(err, wasmbin.ErrMalformed) {
				t.Errorf("%s % x: got %d, %v; want a malformed error", tc.kind, tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want || !r.Done() {
			t.Errorf("%s % x: got %d, %v (%d bytes left); want %d", tc.kind, tc.in, got, err, r.Len(), tc.want)
		}
	}
}

// TestLEBReference: every encoding of up to 3 bytes and the edges of the
// longest ones decode as the spec's definition says.
func TestLEBReference(t *testing.T) {
	var inputs [][]byte
	for v := 0; v < 1<<16; v++ {
		inputs = append(inputs, []byte{byte(v), byte(v >> 8)})
	}
	for _, last := range []byte{0x00, 0x01, 0x02, 0x07, 0x08, 0x0F, 0x10, 0x1F, 0x3F, 0x40, 0x60, 0x70, 0x78, 0x7E, 0x7F, 0x80} {
		for _, n := range []int{4, 5, 6, 9, 10, 11} {
			for _, fill := range []byte{0x80, 0xFF} {
				b := bytes.Repeat([]byte{fill}, n-1)
				inputs = append(inputs, append(b, last))
			}
		}
	}
	for _, in := range inputs {
		for _, k := range kinds {
			checkLEB(t, k.name, k.bits, k.signed, k.read, k.write, in)
		}
	}
}

func checkLEB(t *testing.T, name string, bits uint, signed bool, read func(*wasmbin.Reader) (*big.Int, error), write func([]byte, *big.Int) []byte, in []byte) {
	t.Helper()
	r := wasmbin.NewReader(in)
	got, err := read(&r)
	want, n, ok := refLEB(in, bits, signed)
	if !ok {
		if err == nil {
			t.Fatalf("%s % x: got %v, want an error", name, in, got)
		}
		if !errors.Is(err, wasmbin.ErrMalformed) {
			t.Fatalf("%s % x: error %v is not ErrMalformed", name, in, err)
		}
		return
	}
	if err != nil || got.Cmp(want) != 0 || r.Off() != n {
		t.Fatalf("%s % x: got %v, %v after %d bytes; want %v after %d", name, in, got, err, r.Off(), want, n)
	}
	// round trip: the shortest encoding decodes to the same value, and is
	// the input itself when the input was the shortest
	enc := write(nil, got)
	r2 := wasmbin.NewReader(enc)
	again, err := read(&r2)
	if err != nil || again.Cmp(got) != 0 || !r2.Done() || len(enc) > n {
		t.Fatalf("%s %v: re-encoded % x, decoded %v, %v", name, got, enc, again, err)
	}
	if minimal(in[:n], signed) && !bytes.Equal(enc, in[:n]) {
		t.Fatalf("%s % x: re-encoded % x", name, in[:n], enc)
	}
}

// minimal reports whether an LEB128 encoding is the shortest of its value.
func minimal(b []byte, signed bool) bool {
	if len(b) == 1 {
		return true
	}
	last, prev := b[len(b)-1], b[len(b)-2]
	if !signed {
		return last != 0
	}
	// a last byte that only repeats the sign of the one before is padding
	return !((last == 0x00 && prev&0x40 == 0) || (last == 0x7F && prev&0x40 != 0))
}

func TestSections(t *testing.T) {
	mod := func(b ...byte) []byte { return append([]byte(wasmbin.Header), b...) }
	for _, tc := range []struct {
		name string
		in   []byte
		want []wasmbin.Section // nil: an error
	}{
		{"empty module", mod(), []wasmbin.Section{}},
		{"two sections", mod(1, 2, 0xAA, 0xBB, 0, 0), []wasmbin.Section{{ID: 1, Off: 8, Start: 10, End: 12}, {ID: 0, Off: 12, Start: 14, End: 14}}},
		{"padded size", mod(3, 0x81, 0x80, 0x00, 7), []wasmbin.Section{{ID: 3, Off: 8, Start: 12, End: 13}}},
		{"size past the end", mod(1, 3, 0, 0), nil},
		{"size unterminated", mod(1, 0x80), nil},
		{"size 6 bytes", mod(1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), nil},
		{"size over 32 bits", mod(1, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F), nil},
		{"id without size", mod(1), nil},
		{"truncated header", []byte("\x00asm\x01"), nil},
		{"bad magic", []byte("\x00asn\x01\x00\x00\x00"), nil},
		{"bad version", []byte("\x00asm\x02\x00\x00\x00"), nil},
		{"empty", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wasmbin.Sections(tc.in)
			if tc.want == nil {
				if !errors.Is(err, wasmbin.ErrMalformed) {
					t.Fatalf("got %v, %v; want a malformed error", got, err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("section %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestReaderBounds: a reader made for a region reads nothing past it,
// whatever the bytes after it, and reports where it stopped.
func TestReaderBounds(t *testing.T) {
	in := append([]byte(wasmbin.Header), 1, 2, 0x80, 0x80, 5, 0x05, 'a', 'b', 'c', 'd', 'e')
	secs, err := wasmbin.Sections(in[:12])
	if err != nil || len(secs) != 1 {
		t.Fatal(secs, err)
	}
	r := secs[0].Reader(in)
	if _, err := r.U32(); err == nil { // 0x80 0x80 then the section ends: the 5 after it is not read
		t.Fatal("read past the section")
	} else if e := new(wasmbin.Error); !errors.As(err, &e) || e.Off != 12 {
		t.Fatalf("error %v, want one at offset 12", err)
	}

	r = wasmbin.NewReader(in[13:])
	sub, err := r.Sub(3)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := sub.ByteVec(); err == nil { // 5 bytes announced, 2 in the region
		t.Fatalf("read %q past the region", b)
	}
	if got := r.Rest(); string(got) != "cde" {
		t.Fatalf("after the sub-reader: %q", got)
	}
	if _, err := r.Sub(4); err == nil {
		t.Fatal("a sub-reader past the end")
	}
	if _, err := r.Bytes(math.MaxUint32); err == nil {
		t.Fatal("Bytes past the end")
	}
	if b, _ := r.Bytes(2); string(b) != "cd" || string(r.Since(r.Off()-2)) != "cd" || r.Since(-1) != nil || r.Since(r.Off()+1) != nil {
		t.Fatal("Bytes or Since")
	}
	if err := r.Expect("region"); err == nil {
		t.Fatal("Expect with a byte left")
	}
	r.Byte() //nolint:errcheck
	if _, ok := r.Peek(); ok || !r.Done() || r.Expect("region") != nil {
		t.Fatal("not done at the end")
	}
	if _, err := r.Byte(); err == nil {
		t.Fatal("a byte past the end")
	}
	var zero wasmbin.Reader
	if _, err := zero.U64(); err == nil || !zero.Done() {
		t.Fatal("the zero reader read something")
	}
	bad := wasmbin.Section{ID: 1, Start: 5, End: 100}
	if br := bad.Reader(in); !br.Done() || bad.Payload(in) != nil {
		t.Fatal("a section outside the input reads")
	}
}

func TestNamesAndVectors(t *testing.T) {
	r := wasmbin.NewReader([]byte{3, 'a', 0xC3, 0xA9, 2, 0xC3, 0x28})
	if n, err := r.Name(); err != nil || string(n) != "aé" {
		t.Fatalf("name %q, %v", n, err)
	}
	if n, err := r.Name(); !errors.Is(err, wasmbin.ErrMalformed) {
		t.Fatalf("invalid UTF-8 name %q, %v", n, err)
	}
	r = wasmbin.NewReader([]byte{3, 1, 2, 3})
	if n, err := r.VecLen(); n != 3 || err != nil {
		t.Fatalf("VecLen %d, %v", n, err)
	}
	r = wasmbin.NewReader([]byte{4, 1, 2, 3})
	if n, err := r.VecLen(); !errors.Is(err, wasmbin.ErrMalformed) {
		t.Fatalf("a vector longer than its bytes: %d, %v", n, err)
	}
}

func TestLimitsAndImports(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want wasmbin.Limits
		bad  bool
	}{
		{[]byte{0x00, 0x02}, wasmbin.Limits{Min: 2}, false},
		{[]byte{0x01, 0x01, 0x80, 0x01}, wasmbin.Limits{Flags: 1, Min: 1, Max: 128}, false},
		{[]byte{0x03, 0x01, 0x02}, wasmbin.Limits{Flags: 3, Min: 1, Max: 2}, false},
		{[]byte{0x04, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, wasmbin.Limits{Flags: 4, Min: 1<<36 - 1}, false},
		{[]byte{0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, wasmbin.Limits{}, true}, // 32-bit min over 32 bits
		{[]byte{0x01, 0x01}, wasmbin.Limits{}, true},                               // no max
		{[]byte{0x08, 0x01}, wasmbin.Limits{}, true},
	} {
		r := wasmbin.NewReader(tc.in)
		got, err := r.Limits()
		if tc.bad != (err != nil) || !tc.bad && (got != tc.want || !r.Done()) {
			t.Errorf("limits % x: %+v, %v", tc.in, got, err)
		}
	}

	name := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	imp := func(desc ...byte) []byte { return append(append(name("m"), name("f")...), desc...) }
	for _, tc := range []struct {
		in   []byte
		want wasmbin.Import
		err  error
	}{
		{imp(0x00, 0x05), wasmbin.Import{Kind: wasmbin.KindFunc, Index: 5}, nil},
		{imp(0x01, 0x70, 0x00, 0x01), wasmbin.Import{Kind: wasmbin.KindTable, Type: 0x70, Limits: wasmbin.Limits{Min: 1}}, nil},
		{imp(0x02, 0x01, 0x01, 0x02), wasmbin.Import{Kind: wasmbin.KindMemory, Limits: wasmbin.Limits{Flags: 1, Min: 1, Max: 2}}, nil},
		{imp(0x03, 0x7E, 0x01), wasmbin.Import{Kind: wasmbin.KindGlobal, Type: 0x7E, Mutable: true}, nil},
		{imp(0x04, 0x00, 0x02), wasmbin.Import{Kind: wasmbin.KindTag, Index: 2}, nil},
		{imp(0x03, 0x7F, 0x02), wasmbin.Import{}, wasmbin.ErrMalformed},         // mutability 2
		{imp(0x03, 0x64, 0x70, 0x00), wasmbin.Import{}, wasmbin.ErrUnsupported}, // a GC reference type
		{imp(0x05, 0x00), wasmbin.Import{}, wasmbin.ErrMalformed},
		{imp(0x04, 0x01, 0x00), wasmbin.Import{}, wasmbin.ErrMalformed},
		{imp(0x00), wasmbin.Import{}, wasmbin.ErrMalformed},
		{name("m"), wasmbin.Import{}, wasmbin.ErrMalformed},
	} {
		r := wasmbin.NewReader(tc.in)
		got, err := r.Import()
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("import % x: %+v, %v; want %v", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !r.Done() || string(got.Module) != "m" || string(got.Name) != "f" ||
			got.Kind != tc.want.Kind || got.KindOff != 4 || got.Index != tc.want.Index || got.Type != tc.want.Type ||
			got.Mutable != tc.want.Mutable || got.Limits != tc.want.Limits {
			t.Errorf("import % x: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestEndSize: a size patched in front of bytes already written takes as
// many bytes as it needs, and what follows it moves intact.
func TestEndSize(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 16383, 16384, 1 << 21} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		b, at := wasmbin.BeginSize([]byte("pre"))
		b = append(b, payload...)
		b, err := wasmbin.EndSize(b, at)
		if err != nil {
			t.Fatal(err)
		}
		want := append(wasmbin.AppendU32([]byte("pre"), uint32(n)), payload...)
		if !bytes.Equal(b, want) {
			t.Fatalf("%d bytes: got % x..., want % x...", n, b[:min(len(b), 8)], want[:min(len(want), 8)])
		}
	}
	if _, err := wasmbin.EndSize([]byte{1}, 1); err == nil {
		t.Fatal("EndSize without a placeholder")
	}
	if b, err := wasmbin.AppendSection(nil, 11, []byte{1, 2}); err != nil || !bytes.Equal(b, []byte{11, 2, 1, 2}) {
		t.Fatalf("AppendSection % x, %v", b, err)
	}
}

// FuzzReader: no input makes the reader panic or read past its slice;
// every LEB128 it accepts is what the spec's definition gives and
// re-encodes to itself (its shortest form); every module it splits into
// sections is rebuilt from them into one that splits the same way, and
// into the input itself when the sizes were the shortest.
//
//	go test ./host/internal/wasmbin -run '^$' -fuzz FuzzReader -fuzztime 30s
func FuzzReader(f *testing.F) {
	f.Add([]byte(wasmbin.Header))
	f.Add(append([]byte(wasmbin.Header), 1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 5, 3, 1, 0, 1))
	f.Add(append([]byte(wasmbin.Header), 2, 7, 1, 1, 'm', 1, 'f', 0, 0))
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x0F})
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01})
	f.Add([]byte{0x01, 0x01, 'm', 0x01, 'f', 0x02, 0x01, 0x80, 0x01, 0x02})
	f.Fuzz(func(t *testing.T, in []byte) {
		// LEB128s at the start of the input
		for _, k := range kinds {
			checkLEB(t, k.name, k.bits, k.signed, k.read, k.write, in)
		}

		// sections
		if secs, err := wasmbin.Sections(in); err == nil {
			out := []byte(wasmbin.Header)
			for _, s := range secs {
				if s.Off < 8 || s.Start <= s.Off || s.End < s.Start || s.End > len(in) {
					t.Fatalf("section %+v outside %d bytes", s, len(in))
				}
				if out, err = wasmbin.AppendSection(out, s.ID, s.Payload(in)); err != nil {
					t.Fatal(err)
				}
			}
			again, err := wasmbin.Sections(out)
			if err != nil || len(again) != len(secs) {
				t.Fatalf("rebuilt: %v, %d sections of %d", err, len(again), len(secs))
			}
			shortest := true
			for i, s := range secs {
				if again[i].ID != s.ID || !bytes.Equal(again[i].Payload(out), s.Payload(in)) {
					t.Fatalf("rebuilt section %d differs", i)
				}
				shortest = shortest && minimal(in[s.Off+1:s.Start], false)
			}
			if shortest && !bytes.Equal(out, in) {
				t.Fatal("rebuilt with the shortest sizes, differs from the input")
			}
		} else if !errors.Is(err, wasmbin.ErrMalformed) {
			t.Fatalf("Sections: %v", err)
		}

		// every read, driven by the input: each byte picks the next one
		r := wasmbin.NewReader(in)
		for !r.Done() {
			before := r.Off()
			op, _ := r.Byte()
			var err error
			switch op % 13 {
			case 0:
				_, err = r.U32()
			case 1:
				_, err = r.I32()
			case 2:
				_, err = r.S33()
			case 3:
				_, err = r.U64()
			case 4:
				_, err = r.I64()
			case 5:
				_, err = r.Name()
			case 6:
				_, err = r.ByteVec()
			case 7:
				_, err = r.VecLen()
			case 8:
				_, err = r.Limits()
			case 9:
				_, err = r.Import()
			case 10:
				_, err = r.ValType()
			case 11:
				var n uint32
				if n, err = r.U32(); err == nil {
					var sub wasmbin.Reader
					if sub, err = r.Sub(n); err == nil {
						for !sub.Done() {
							if _, err := sub.U64(); err != nil {
								break
							}
						}
						if sub.Off() > r.Off() {
							t.Fatalf("sub-reader at %d past its end %d", sub.Off(), r.Off())
						}
					}
				}
			case 12:
				_, err = r.Bytes(uint32(op))
			}
			if r.Off() < before || r.Off() > len(in) {
				t.Fatalf("offset %d after %d, input %d bytes", r.Off(), before, len(in))
			}
			if err != nil {
				var e *wasmbin.Error
				if !errors.As(err, &e) || e.Off < 0 || e.Off > len(in) {
					t.Fatalf("error %v", err)
				}
				return
			}
		}
	})
}
