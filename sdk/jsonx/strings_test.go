package jsonx

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// TestDecodedStringsKept: strings decoded into values share chunks
// (makeString), each part handed out once: every value kept across many
// decodes, on several goroutines at once, keeps its own text, short or
// long, plain or escaped.
func TestDecodedStringsKept(t *testing.T) {
	d := decoderFor(reflect.TypeOf(flat{}))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var kept []flat
			var want []string
			for i := range 2000 {
				text := strings.Repeat(fmt.Sprintf("%c", 'a'+(g+i)%26), i%(2*stringMax))
				raw := text
				if i%7 == 0 {
					text += "\n\"é"
					raw += `\n\"\u00e9`
				}
				var v flat
				if err := d.decode([]byte(`{"text":"`+raw+`","l":["x"]}`), &v); err != nil {
					t.Error(err)
					return
				}
				kept, want = append(kept, v), append(want, text)
			}
			for i := range kept {
				if kept[i].Text != want[i] {
					t.Errorf("goroutine %d value %d: %q, want %q", g, i, kept[i].Text, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	if s := makeString(nil); s != "" {
		t.Fatalf("empty: %q", s)
	}
}
