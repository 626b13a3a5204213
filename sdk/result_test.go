package sdk

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// TestContentBlocks: every kind of block is written as MCP's content
// block of its kind, text escaped, data base64, the optional fields left
// out when empty, and the zero Content as an empty text.
func TestContentBlocks(t *testing.T) {
	for _, tc := range []struct {
		c    Content
		want string
	}{
		{Text("a \"q\"\n"), `{"type":"text","text":"a \"q\"\n"}`},
		{Image([]byte{1, 2, 3}, "image/png"), `{"type":"image","data":"AQID","mimeType":"image/png"}`},
		{Audio([]byte("hi"), "audio/wav"), `{"type":"audio","data":"aGk=","mimeType":"audio/wav"}`},
		{TextResource("file:///a", "text/plain", "body"), `{"type":"resource","resource":{"uri":"file:///a","mimeType":"text/plain","text":"body"}}`},
		{TextResource("file:///a", "", ""), `{"type":"resource","resource":{"uri":"file:///a","text":""}}`},
		{BlobResource("file:///b", "application/octet-stream", []byte{0xff}), `{"type":"resource","resource":{"uri":"file:///b","mimeType":"application/octet-stream","blob":"/w=="}}`},
		{ResourceLink("file:///c", "c", "text/x"), `{"type":"resource_link","uri":"file:///c","name":"c","mimeType":"text/x"}`},
		{ResourceLink("file:///c", "c", ""), `{"type":"resource_link","uri":"file:///c","name":"c"}`},
		{Content{}, `{"type":"text","text":""}`},
	} {
		got := string(appendResult(nil, &Result{Content: []Content{tc.c}}))
		want := `{"content":[` + tc.want + `],"isError":false}`
		if got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("invalid JSON %s", got)
		}
	}
	// several blocks, structured content and the error flag
	r := &Result{Content: []Content{Text("a"), Image([]byte{0}, "image/gif")}, Structured: map[string]int{"n": 1}, IsError: true}
	if got, want := string(appendResult(nil, r)), `{"content":[{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/gif"}],"structuredContent":{"n":1},"isError":true}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestResultsNotReused: the constructors' results come from a slab, each
// handed out once: results kept across many calls keep their own blocks.
func TestResultsNotReused(t *testing.T) {
	var kept []*Result
	for i := range 3*resultChunk + 5 {
		kept = append(kept, TextResult(string(rune('a'+i%26))))
		if i%2 == 0 {
			kept = append(kept, ErrorResult("e"))
		}
	}
	seen := map[*Result]bool{}
	j := 0
	for i := range 3*resultChunk + 5 {
		r := kept[j]
		j++
		if seen[r] || r.IsError || len(r.Content) != 1 || r.Content[0].text != string(rune('a'+i%26)) {
			t.Fatalf("result %d: %p %+v", i, r, r)
		}
		seen[r] = true
		if i%2 == 0 {
			if e := kept[j]; seen[e] || !e.IsError || e.Content[0].text != "e" {
				t.Fatalf("error result %d: %+v", i, e)
			}
			seen[kept[j]] = true
			j++
		}
	}
}

// TestResultsConcurrent: handlers running natively on many goroutines at
// once (tests) each get results of their own from the slab.
func TestResultsConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var kept []*Result
			for i := range 500 {
				kept = append(kept, TextResult(fmt.Sprint(g, ":", i)))
			}
			for i, r := range kept {
				if r.Content[0].text != fmt.Sprint(g, ":", i) {
					t.Errorf("goroutine %d result %d: %q", g, i, r.Content[0].text)
					return
				}
			}
		}()
	}
	wg.Wait()
}
