package mcp

import (
	"testing"
	"time"
)

func TestSessionsBoundAndExpiry(t *testing.T) {
	tb := newSessions(2, 50*time.Millisecond)
	defer tb.close()
	a, _ := tb.create("o", "2025-11-25", clientCaps{}, nil)
	time.Sleep(5 * time.Millisecond)
	b, _ := tb.create("o", "2025-11-25", clientCaps{}, nil)
	// a third session evicts the least recently used idle one (a)
	c, err := tb.create("o", "2025-11-25", clientCaps{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tb.get(a.id, "o") != nil || tb.get(b.id, "o") == nil || tb.get(c.id, "o") == nil {
		t.Fatal("eviction did not end the least recently used session")
	}
	if a.ctx.Err() == nil {
		t.Fatal("an evicted session's context is not ended")
	}
	// another owner cannot use the id
	if tb.get(b.id, "other") != nil {
		t.Fatal("a session answered another principal")
	}
	// busy sessions are not evicted: with both busy, a third is refused
	done1 := b.track([]byte("1"), func() {})
	done2 := c.track([]byte("2"), func() {})
	if _, err := tb.create("o", "2025-11-25", clientCaps{}, nil); err != errTooManySessions {
		t.Fatalf("full table of busy sessions: %v", err)
	}
	done1()
	done2()
	// idle expiry
	time.Sleep(120 * time.Millisecond)
	if tb.get(b.id, "o") != nil {
		t.Fatal("an idle session outlived the idle timeout")
	}
}

func TestModernResultSplice(t *testing.T) {
	s := &Server{metaJSON: []byte(`{"m":1}`)}
	for in, want := range map[string]string{
		`{}`:                                    `{"resultType":"complete","_meta":{"m":1}}`,
		`{"content":[]}`:                        `{"resultType":"complete","_meta":{"m":1},"content":[]}`,
		`{"resultType":"input_required","a":1}`: `{"_meta":{"m":1},"resultType":"input_required","a":1}`,
		`{"_meta":{"x":2},"a":1}`:               `{"resultType":"complete","_meta":{"m":1,"x":2},"a":1}`,
		// The result's own _meta gets the serverInfo; a nested one does not count.
		`{"a":1,"_meta":{}}`:                     `{"resultType":"complete","a":1,"_meta":{"m":1}}`,
		`{"a":{"_meta":{}},"resultType":"task"}`: `{"_meta":{"m":1},"a":{"_meta":{}},"resultType":"task"}`,
		`{"structuredContent":{"resultType":"x"},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"p"}}}`: `{"resultType":"complete","structuredContent":{"resultType":"x"},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"p"}}}`,
		`{"_meta":null}`:                  `{"resultType":"complete","_meta":null}`,
		`{ "_meta" : { "k" : [ "}" ] } }`: `{"resultType":"complete", "_meta" : {"m":1, "k" : [ "}" ] } }`,
	} {
		if got := string(s.modernResult([]byte(in), "complete")); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

func TestParamsDigest(t *testing.T) {
	same := [][2]string{{``, `{}`}, {`null`, `{}`}, {`{"a":1,"b":[2,3]}`, ` { "b" : [2,3], "a" : 1 } `}, {`{"n":1.0}`, `{"n":1.0}`}}
	for _, c := range same {
		if paramsDigest("t", []byte(c[0])) != paramsDigest("t", []byte(c[1])) {
			t.Errorf("%s and %s digest differently", c[0], c[1])
		}
	}
	diff := [][2]string{{`{"a":1}`, `{"a":2}`}, {`{}`, `{"a":null}`}}
	for _, c := range diff {
		if paramsDigest("t", []byte(c[0])) == paramsDigest("t", []byte(c[1])) {
			t.Errorf("%s and %s digest alike", c[0], c[1])
		}
	}
	if paramsDigest("t", nil) == paramsDigest("u", nil) {
		t.Error("the name is not in the digest")
	}
}
