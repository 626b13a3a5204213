//go:build !wasip1

package guest

import (
	"encoding/json"
	"testing"
)

// outHost is a native host that keeps what is written.
type outHost struct {
	out  []byte
	kept [][]byte
}

func (h *outHost) WriteOutput(b []byte)              { h.out = append(h.out, b...) }
func (h *outHost) Log(int, string)                   {}
func (h *outHost) Progress(float64, float64, string) {}
func (h *outHost) Call(string, string, []byte) ([]byte, uint32) {
	return nil, 0
}
func (h *outHost) KeptBytes(k uint32) []byte { return h.kept[k] }

// TestCollectionMarker: a collection's marker (level 0) is written as
// it is where it stands, and carried into a text block as a level 1
// marker, escaped there: the JSON and its text are the same object.
func TestCollectionMarker(t *testing.T) {
	coll := []byte(`{"type":"hit","s":"a\"b"},{"type":"hit"}`)
	h := &outHost{kept: [][]byte{coll}}
	defer SetNativeHost(h)()
	ResetBlobs()
	b := KeptByHost(0, len(coll))
	if !Splicing() {
		t.Fatal("a collection kept, and no splicing")
	}
	doc := append(b.AppendRaw([]byte(`{"events":[`)), `],"n":1}`...)
	if i, _, level, _ := nextMarker(doc); i != len(`{"events":[`) || level != 0 {
		t.Fatalf("marker at %d, level %d", i, level)
	}
	res := append([]byte(`{"text":`), AppendJSONText(nil, string(doc))...)
	res = append(append(res, `,"structured":`...), doc...)
	res = append(res, '}')
	WriteSpliced(res)
	var got struct {
		Text       string
		Structured json.RawMessage
	}
	if err := json.Unmarshal(h.out, &got); err != nil {
		t.Fatalf("%v: %s", err, h.out)
	}
	want := `{"events":[` + string(coll) + `],"n":1}`
	if got.Text != want || string(got.Structured) != want {
		t.Fatalf("text %s\nstructured %s\nwant %s", got.Text, got.Structured, want)
	}
	// an empty collection writes nothing
	if e := KeptByHost(0, 0); string(e.AppendRaw([]byte("x"))) != "x" {
		t.Fatal("an empty collection wrote a marker")
	}
}
