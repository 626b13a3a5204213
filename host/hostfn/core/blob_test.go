package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// contents is jsonx's string encoding without the quotes: what the Go SDK
// would write for a string it holds itself.
func contents(s string) []byte {
	b := jsonx.AppendString(nil, s)
	return b[1 : len(b)-1]
}

var escapeCases = []string{
	"", "plain", `"quoted" \back\slash`, "tab\tnew\nline\r\x00\x01\x1f\x7f",
	"\b\f", "<html>&amp; \u2028\u2029", "é漢字🙂", "bad \xff\xfe utf8 \xe2\x82", "\xef\xbf\xbd real U+FFFD",
	strings.Repeat("abcdefghij", 9) + "\n", strings.Repeat("1234567\"é\\\x01yz漢", 9),
}

func TestAppendEscapedMatchesSDK(t *testing.T) {
	for _, s := range escapeCases {
		one := AppendEscaped(nil, []byte(s), 1)
		if want := contents(s); !bytes.Equal(one, want) {
			t.Errorf("escape 1 of %q = %q, want %q", s, one, want)
		}
		two := AppendEscaped([]byte("prefix"), []byte(s), 2)
		if want := append([]byte("prefix"), contents(string(contents(s)))...); !bytes.Equal(two, want) {
			t.Errorf("escape 2 of %q = %q, want %q", s, two, want)
		}
	}
}

func FuzzAppendEscaped(f *testing.F) {
	for _, s := range escapeCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := AppendEscaped(nil, b, 1), contents(string(b)); !bytes.Equal(got, want) {
			t.Fatalf("escape 1 of %q = %q, want %q", b, got, want)
		}
		if got, want := AppendEscaped(nil, b, 2), contents(string(contents(string(b)))); !bytes.Equal(got, want) {
			t.Fatalf("escape 2 of %q = %q, want %q", b, got, want)
		}
	})
}

func TestValidObject(t *testing.T) {
	blob := AppendEscaped(nil, []byte("x\"y\\z\n"), 1)
	// build assembles parts; a nil part is the blob, spliced
	build := func(parts ...[]byte) ([]byte, []hostfn.Span) {
		var out []byte
		var spans []hostfn.Span
		for _, p := range parts {
			if p == nil {
				spans = append(spans, hostfn.Span{Start: len(out), End: len(out) + len(blob)})
				out = append(out, blob...)
				continue
			}
			out = append(out, p...)
		}
		return out, spans
	}
	b := func(s string) []byte { return []byte(s) }
	for _, tc := range []struct {
		name  string
		parts [][]byte
		want  bool
	}{
		{"in a string", [][]byte{b(`{"a":"`), nil, b(`"}`)}, true},
		{"twice, in key and value", [][]byte{b(`{"`), nil, b(`":"pre`), nil, b(`post"}`)}, true},
		{"no spans", [][]byte{b(`{"a":1}`)}, true},
		{"outside a string", [][]byte{b(`{"a":`), nil, b(`}`)}, false},
		{"between members", [][]byte{b(`{"a":1,`), nil, b(`"b":2}`)}, false},
		{"after a backslash", [][]byte{b(`{"a":"\`), nil, b(`"}`)}, false},
		{"in a \\u escape", [][]byte{b(`{"a":"\u00`), nil, b(`"}`)}, false},
		{"in a number", [][]byte{b(`{"a":1`), nil, b(`}`)}, false},
		{"in a literal", [][]byte{b(`{"a":f`), nil, b(`lse}`)}, false},
		{"not an object", [][]byte{b(`["`), nil, b(`"]`)}, false},
		{"invalid elsewhere", [][]byte{b(`{"a":"`), nil, b(`",}`)}, false},
	} {
		out, spans := build(tc.parts...)
		if got := ValidObject(out, spans); got != tc.want {
			t.Errorf("%s: ValidObject(%s) = %v, want %v", tc.name, out, got, tc.want)
		}
		if tc.want && !json.Valid(out) {
			t.Errorf("%s: accepted output is not valid JSON: %s", tc.name, out)
		}
	}
	if ValidObject([]byte(`{"a":"xy"}`), []hostfn.Span{{Start: 6, End: 5}}) || ValidObject([]byte(`{"a":"xy"}`), []hostfn.Span{{Start: 6, End: 20}}) {
		t.Error("spans out of order or bounds accepted")
	}
}

// TestKeptResponse runs response_keep and output_blob as a guest would:
// a read's response kept, then written into the output twice.
func TestKeptResponse(t *testing.T) {
	c := &hostfn.Call{MaxOutput: 1 << 20}
	stack := make([]uint64, 2)
	responseKeep(context.Background(), c, nil, stack)
	if stack[0] != ^uint64(0) {
		t.Fatalf("keep with no response pending = %#x, want -1", stack[0])
	}
	for i, resp := range [][]byte{[]byte("a\"b\n"), []byte("bad \xff")} {
		c.Response = resp
		responseKeep(context.Background(), c, nil, stack)
		utf8 := stack[0]>>32 == 1
		if uint32(stack[0]) != uint32(i) || utf8 != (i == 0) || c.Response != nil {
			t.Fatalf("keep %d = %#x (pending %q)", i, stack[0], c.Response)
		}
	}
	c.Output = append(c.Output, `{"s":"`...)
	stack[0], stack[1] = 0, 1
	outputBlob(context.Background(), c, nil, stack)
	c.Output = append(c.Output, `","t":"`...)
	stack[0], stack[1] = 0, 2
	outputBlob(context.Background(), c, nil, stack)
	c.Output = append(c.Output, `"}`...)
	if want := `{"s":"a\"b\n","t":"a\\\"b\\n"}`; string(c.Output) != want {
		t.Fatalf("output %s, want %s", c.Output, want)
	}
	if !ValidObject(c.Output, c.Spliced) || len(c.Spliced) != 2 {
		t.Fatalf("spans %v", c.Spliced)
	}
	for _, tc := range []struct {
		name      string
		h, escape uint64
		max       int64
		tooLarge  bool
	}{
		{"unknown handle", 7, 1, 1 << 20, false},
		{"escape 0", 0, 0, 1 << 20, false},
		{"escape 3", 0, 3, 1 << 20, false},
		{"over max_result_bytes", 0, 2, int64(len(c.Output)) + 4, true},
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				var tl hostfn.ErrResultTooLarge
				if err == nil || errors.As(err, &tl) != tc.tooLarge {
					t.Errorf("%s: trap %v", tc.name, err)
				}
			}()
			c.MaxOutput = tc.max
			stack[0], stack[1] = tc.h, tc.escape
			outputBlob(context.Background(), c, nil, stack)
		}()
	}
	c.Reset()
	if len(c.Kept) != 0 || len(c.Spliced) != 0 {
		t.Fatal("Reset left kept responses or spans")
	}
}

func BenchmarkAppendEscaped1MiB(b *testing.B) {
	line := strings.Repeat("abcdefghij", 9) + "\n"
	src := []byte(strings.Repeat(line, (1<<20)/len(line)+1)[:1<<20])
	dst := make([]byte, 0, 3<<20)
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		dst = AppendEscaped(dst[:0], src, 2)
	}
}

// BenchmarkAppendEscapedJSON is the text block of a large structured
// result: JSON, a quote every few bytes (a Machine Mode call's 10,000
// events).
func BenchmarkAppendEscapedJSON(b *testing.B) {
	ev := `{"type":"hit","rank":1234,"id":"doc_1234","title":"A document about agent-operable tools"},`
	src := []byte(`{"events":[` + strings.Repeat(ev, 10000) + `{}]}`)
	dst := make([]byte, 0, 3*len(src))
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		dst = appendEscaped(dst[:0], src, 1, true)
	}
}

// mem is a guest's memory for the tests.
type mem []byte

func (m mem) Read(off, n uint32) ([]byte, bool) {
	if uint64(off)+uint64(n) > uint64(len(m)) {
		return nil, false
	}
	return m[off : off+n], true
}

func (m mem) Write(off uint32, b []byte) bool {
	if uint64(off)+uint64(len(b)) > uint64(len(m)) {
		return false
	}
	copy(m[off:], b)
	return true
}

// TestBytesKeep: bytes of the guest's memory kept as a copy (the guest may
// reuse its buffer), written escaped by output_blob like a kept response;
// a range outside the memory, too many kept, or more than the result may
// hold trap.
func TestBytesKeep(t *testing.T) {
	m := mem(`....{"a":"x\"y","b":[1]}....bad` + "\xff")
	c := &hostfn.Call{MaxOutput: 1 << 20}
	stack := []uint64{4, 20}
	bytesKeep(context.Background(), c, m, stack)
	if stack[0] != 1<<32 {
		t.Fatalf("handle %#x", stack[0])
	}
	stack[0], stack[1] = 28, 4
	bytesKeep(context.Background(), c, m, stack)
	if stack[0] != 1 {
		t.Fatalf("handle of invalid UTF-8 %#x", stack[0])
	}
	copy(m[4:], "XXXX") // the guest's buffer changes: the kept copy does not
	c.Output = append(c.Output, `{"content":[{"type":"text","text":"`...)
	stack[0], stack[1] = 0, 1
	outputBlob(context.Background(), c, m, stack)
	c.Output = append(c.Output, `"}],"structuredContent":{"a":"x\"y","b":[1]}}`...)
	if want := `{"content":[{"type":"text","text":"{\"a\":\"x\\\"y\",\"b\":[1]}"}],"structuredContent":{"a":"x\"y","b":[1]}}`; string(c.Output) != want {
		t.Fatalf("output %s\nwant   %s", c.Output, want)
	}
	if !ValidObject(c.Output, c.Spliced) {
		t.Fatal("not valid")
	}
	var v struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(c.Output, &v); err != nil || v.Content[0].Text != `{"a":"x\"y","b":[1]}` {
		t.Fatalf("text %q: %v", v.Content, err)
	}
	for _, tc := range []struct {
		name     string
		ptr, n   uint64
		max      int64
		full     bool
		tooLarge bool
	}{
		{"outside the memory", 30, 10, 1 << 20, false, false},
		{"past 4 GiB", 1<<32 - 1, 2, 1 << 20, false, false},
		{"more than max_result_bytes", 0, 20, 10, false, true},
		{"too many kept", 0, 1, 1 << 20, true, false},
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				var tl hostfn.ErrResultTooLarge
				if err == nil || errors.As(err, &tl) != tc.tooLarge {
					t.Errorf("%s: trap %v", tc.name, err)
				}
			}()
			c.MaxOutput = tc.max
			if tc.full {
				for len(c.Kept) < maxKept {
					c.Kept = append(c.Kept, hostfn.Kept{})
				}
			}
			stack[0], stack[1] = tc.ptr, tc.n
			bytesKeep(context.Background(), c, m, stack)
		}()
	}
}

// rawCase assembles parts around a collection of items objects written
// as it is (a nil part; ABI v1.2), with its span.
func rawCase(items int, parts ...[]byte) ([]byte, []hostfn.Span) {
	var coll []byte
	for i := 0; i < items; i++ {
		if i > 0 {
			coll = append(coll, ',')
		}
		coll = append(coll, `{"type":"hit","s":"a\"b,c]"}`...)
	}
	var out []byte
	var spans []hostfn.Span
	for _, p := range parts {
		if p == nil {
			spans = append(spans, hostfn.Span{Start: len(out), End: len(out) + len(coll), Items: items})
			out = append(out, coll...)
			continue
		}
		out = append(out, p...)
	}
	return out, spans
}

// TestValidObjectCollections: a collection written as it is stands for
// its values in the check, so that the answer is exactly encoding/json's
// on the real output, wherever the guest put the collection.
func TestValidObjectCollections(t *testing.T) {
	b := func(s string) []byte { return []byte(s) }
	for _, tc := range []struct {
		name  string
		parts [][]byte
	}{
		{"an array's elements", [][]byte{b(`{"events":[`), nil, b(`],"n":1}`)}},
		{"before more elements", [][]byte{b(`{"events":[`), nil, b(`,{"x":1}]}`)}},
		{"after elements", [][]byte{b(`{"events":[1,`), nil, b(`]}`)}},
		{"a member's value", [][]byte{b(`{"a":`), nil, b(`}`)}},
		{"a key", [][]byte{b(`{`), nil, b(`:1}`)}},
		{"in a string", [][]byte{b(`{"a":"`), nil, b(`"}`)}},
		{"after a minus", [][]byte{b(`{"a":[-`), nil, b(`]}`)}},
		{"after a digit", [][]byte{b(`{"a":[1`), nil, b(`]}`)}},
		{"twice, joined", [][]byte{b(`{"a":[`), nil, nil, b(`]}`)}},
		{"twice, with a comma", [][]byte{b(`{"a":[`), nil, b(`,`), nil, b(`]}`)}},
		{"before a literal", [][]byte{b(`{"a":[`), nil, b(`true]}`)}},
		{"top level", [][]byte{nil}},
		{"after a member", [][]byte{b(`{"a":1,`), nil, b(`}`)}},
	} {
		for _, items := range []int{1, 2, 5} {
			out, spans := rawCase(items, tc.parts...)
			if got, want := ValidObject(out, spans), len(out) > 0 && out[0] == '{' && json.Valid(out); got != want {
				t.Errorf("%s, %d items: ValidObject(%s) = %v, encoding/json %v", tc.name, items, out, got, want)
			}
		}
	}
}

// FuzzValidObjectCollections: whatever the guest writes around a
// collection, ValidObject answers as encoding/json does on the output.
func FuzzValidObjectCollections(f *testing.F) {
	f.Add([]byte(`{"events":[`), []byte(`]}`), uint8(2))
	f.Add([]byte(`{"a":"`), []byte(`"}`), uint8(1))
	f.Add([]byte(`{"a":[-`), []byte(`]}`), uint8(1))
	f.Add([]byte(`{"a":`), []byte(`}`), uint8(3))
	f.Fuzz(func(t *testing.T, pre, post []byte, items uint8) {
		n := int(items%4) + 1
		out, spans := rawCase(n, pre, nil, post)
		if got, want := ValidObject(out, spans), len(out) > 0 && out[0] == '{' && json.Valid(out); got != want {
			t.Fatalf("ValidObject(%q) = %v, encoding/json %v", out, got, want)
		}
	})
}

// TestOutputBlobCollection: escape 0 writes a collection as it is, and
// its text block copy from the escaping made ahead; it traps for a kept
// response that is not a collection, and for an escape above 2.
func TestOutputBlobCollection(t *testing.T) {
	coll := []byte(`{"type":"hit","s":"a\"b"},{"type":"hit"}`)
	c := &hostfn.Call{MaxOutput: 1 << 20}
	c.Kept = append(c.Kept, hostfn.Kept{Bytes: coll, UTF8: true, Items: 2, Escaped: AppendEscaped(nil, coll, 1)},
		hostfn.Kept{Bytes: []byte(`{"a":1}`), UTF8: true})
	c.Output = append(c.Output, `{"content":[{"type":"text","text":"{\"events\":[`...)
	outputBlob(context.Background(), c, nil, []uint64{0, 1})
	c.Output = append(c.Output, `]}"}],"structuredContent":{"events":[`...)
	outputBlob(context.Background(), c, nil, []uint64{0, 0})
	c.Output = append(c.Output, `]},"isError":false}`...)
	var r struct {
		Content    []struct{ Text string }
		Structured struct {
			Events []map[string]any
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(c.Output, &r); err != nil || len(r.Structured.Events) != 2 || r.Content[0].Text != `{"events":[`+string(coll)+`]}` {
		t.Fatalf("%v: %s", err, c.Output)
	}
	if !ValidObject(c.Output, c.Spliced) || len(c.Spliced) != 2 || c.Spliced[1].Items != 2 {
		t.Fatalf("check: %v %+v", ValidObject(c.Output, c.Spliced), c.Spliced)
	}
	for _, tc := range []struct {
		h, escape uint64
		want      string
	}{{1, 0, "not a collection"}, {0, 3, "escape must be 0, 1 or 2"}} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("output_blob(%d, %d): %v, want a trap saying %q", tc.h, tc.escape, r, tc.want)
				}
			}()
			outputBlob(context.Background(), c, nil, []uint64{tc.h, tc.escape})
		}()
	}
	// a stream of short events (escaped a sixth longer): the text block's
	// write makes room for the collection as it is too, which then goes
	// in without the output being copied again
	var big []byte
	for i := range 10000 {
		if i > 0 {
			big = append(big, ',')
		}
		big = fmt.Appendf(big, `{"type":"hit","rank":%d,"id":"doc_%d","title":"A document about agent-operable tools"}`, i, i)
	}
	bc := &hostfn.Call{MaxOutput: 1 << 24, Kept: []hostfn.Kept{{Bytes: big, UTF8: true, Items: 10000, Escaped: AppendEscaped(nil, big, 1)}}}
	bc.Output = append(bc.Output, `{"content":[{"type":"text","text":"{\"events\":[`...)
	outputBlob(context.Background(), bc, nil, []uint64{0, 1})
	at := unsafe.SliceData(bc.Output)
	bc.Output = append(bc.Output, `]}"}],"structuredContent":{"events":[`...)
	outputBlob(context.Background(), bc, nil, []uint64{0, 0})
	if unsafe.SliceData(bc.Output) != at {
		t.Error("the output was copied again for the collection after its escaped text")
	}
	bc.Output = append(bc.Output, `]},"isError":false}`...)
	if !json.Valid(bc.Output) || !ValidObject(bc.Output, bc.Spliced) {
		t.Errorf("the result of %d bytes is not valid", len(bc.Output))
	}
	// a collection past max_result_bytes traps as any output does
	small := &hostfn.Call{MaxOutput: 10, Kept: c.Kept}
	func() {
		defer func() {
			if _, ok := recover().(hostfn.ErrResultTooLarge); !ok || !small.Overflow {
				t.Error("a collection past the bound did not trap with ErrResultTooLarge")
			}
		}()
		outputBlob(context.Background(), small, nil, []uint64{0, 0})
	}()
}

// BenchmarkAppendEscapedText is BenchmarkAppendEscapedJSON's events
// escaped one at a time by AppendEscapedText, as a collection does.
func BenchmarkAppendEscapedText(b *testing.B) {
	ev := []byte(`{"type":"hit","rank":1234,"id":"doc_1234","title":"A document about agent-operable tools"}`)
	dst := make([]byte, 0, 3*10000*len(ev))
	b.SetBytes(int64(10000 * len(ev)))
	for i := 0; i < b.N; i++ {
		dst = dst[:0]
		for k := 0; k < 10000; k++ {
			dst = AppendEscapedText(dst, ev)
		}
	}
}

// FuzzAppendEscapedText: for valid UTF-8, AppendEscapedText writes what
// AppendEscaped writes once.
func FuzzAppendEscapedText(f *testing.F) {
	for _, s := range escapeCases {
		f.Add([]byte("pre"), []byte(s))
	}
	f.Fuzz(func(t *testing.T, pre, b []byte) {
		if !utf8.Valid(b) {
			return
		}
		if got, want := AppendEscapedText(slices.Clip(pre), b), AppendEscaped(slices.Clone(pre), b, 1); !bytes.Equal(got, want) {
			t.Fatalf("AppendEscapedText(%q) = %q, want %q", b, got, want)
		}
	})
}
