package process

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/hostfntest"
	"github.com/aiodhq/aiod/sdk/abi"
)

// TestProcessStart: start, read (raw pieces, empty at the end, timeout
// when nothing came) and wait, within one call; a clear environment;
// the per-call bound; the grant and the ids checked.
func TestProcessStart(t *testing.T) {
	e := newProcEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &hostfn.Call{Plugin: "p", Owner: "o", Grant: grantProcess([]string{"sh"}, []string{e.root}, false)}
	raw := func(name string, req any) (abi.Code, []byte) {
		b, _ := json.Marshal(req)
		return hostfntest.Call(ctx, e.defs[name], c, b)
	}
	start := func(req abi.ProcessStartRequest) int {
		code, resp := raw("start", req)
		var r abi.ProcessStartResponse
		if code != abi.OK || json.Unmarshal(resp, &r) != nil || r.ID == 0 || r.Cwd != e.root {
			t.Fatalf("start: %v %s", code, resp)
		}
		return r.ID
	}
	readAll := func(id int) string {
		var out []byte
		for {
			code, b := raw("read", abi.ProcessReadRequest{ID: id, MaxBytes: 5, TimeoutMs: 5000})
			if code == abi.Timeout {
				continue
			}
			if code != abi.OK {
				t.Fatalf("read: %v %s", code, b)
			}
			if len(b) > 5 {
				t.Fatalf("read %d bytes, max 5", len(b))
			}
			if len(b) == 0 {
				return string(out)
			}
			out = append(out, b...)
		}
	}
	wait := func(id int, kill bool) abi.ProcessWaitResponse {
		code, b := raw("wait", abi.ProcessWaitRequest{ID: id, Kill: kill})
		var r abi.ProcessWaitResponse
		if code != abi.OK || json.Unmarshal(b, &r) != nil {
			t.Fatalf("wait: %v %s", code, b)
		}
		return r
	}

	id := start(abi.ProcessStartRequest{Argv: []string{"sh", "-c", `echo "$FOO:${HOME-nohome}"; echo err >&2; exit 4`}, Env: map[string]string{"FOO": "bar"}, ClearEnv: true})
	if out := readAll(id); out != "bar:nohome\n" {
		t.Errorf("stdout %q", out)
	}
	if r := wait(id, false); r.ExitCode != 4 || r.Stderr != "err\n" || r.StdoutBytes != 11 || r.Killed != "" {
		t.Errorf("wait %+v", r)
	}
	if code, _ := raw("wait", abi.ProcessWaitRequest{ID: id}); code != abi.NotFound {
		t.Errorf("a second wait: %v", code)
	}

	// nothing yet: timeout; then stopped by wait
	id = start(abi.ProcessStartRequest{Argv: []string{"sh", "-c", "sleep 30"}})
	if code, _ := raw("read", abi.ProcessReadRequest{ID: id, TimeoutMs: 50}); code != abi.Timeout {
		t.Errorf("read of a quiet program: %v", code)
	}
	if r := wait(id, true); r.Killed != "stopped" {
		t.Errorf("wait kill %+v", r)
	}

	// the flood bound
	id = start(abi.ProcessStartRequest{Argv: []string{"sh", "-c", "while :; do echo flood; done"}, MaxOutputBytes: 1000})
	if out := readAll(id); len(out) != 1000 {
		t.Errorf("read %d bytes of a flood bounded at 1000", len(out))
	}
	if r := wait(id, false); r.Killed != "output_limit" || !r.StdoutTruncated {
		t.Errorf("flood %+v", r)
	}

	// at most MaxStartedPerCall at once
	var ids []int
	for range abi.MaxStartedPerCall {
		ids = append(ids, start(abi.ProcessStartRequest{Argv: []string{"sh", "-c", "sleep 30"}}))
	}
	if code, b := raw("start", abi.ProcessStartRequest{Argv: []string{"sh", "-c", "true"}}); code != abi.Unavailable {
		t.Errorf("start past the bound: %v %s", code, b)
	}
	for _, id := range ids {
		wait(id, true)
	}

	for _, tt := range []struct {
		name string
		fn   string
		req  string
		code abi.Code
		msg  string
	}{
		{"program not granted", "start", `{"argv":["cat"]}`, abi.Denied, "not in the granted commands"},
		{"cwd outside", "start", fmt.Sprintf(`{"argv":["sh"],"cwd":%q}`, e.out), abi.Denied, "outside"},
		{"unknown field", "start", `{"argv":["sh"],"progress":true}`, abi.Invalid, "unknown field"},
		{"unknown id", "read", `{"id":99}`, abi.NotFound, "no started program 99"},
		{"read unknown field", "read", `{"id":1,"max":3}`, abi.Invalid, "unknown field"},
		{"wait unknown id", "wait", `{"id":99}`, abi.NotFound, "no started program 99"},
	} {
		code, b := hostfntest.Call(ctx, e.defs[tt.fn], c, []byte(tt.req))
		if code != tt.code || !strings.Contains(string(b), tt.msg) {
			t.Errorf("%s: %v %s", tt.name, code, b)
		}
	}
	noGrant := &hostfn.Call{Plugin: "p", Grant: grantProcess(nil, nil, false)}
	if code, _ := hostfntest.Call(ctx, e.defs["start"], noGrant, []byte(`{"argv":["sh"]}`)); code != abi.Denied {
		t.Errorf("no grant: %v", code)
	}
}

// TestProcessStartEndsWithCall: a program the call did not wait for is
// killed when the call's context ends.
func TestProcessStartEndsWithCall(t *testing.T) {
	e := newProcEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	c := &hostfn.Call{Plugin: "p", Owner: "o", Grant: grantProcess([]string{"sh"}, []string{e.root}, false)}
	code, resp := hostfntest.Call(ctx, e.defs["start"], c, []byte(`{"argv":["sh","-c","echo $$ >pid; exec sleep 60"]}`))
	if code != abi.OK {
		t.Fatalf("start: %v %s", code, resp)
	}
	var r abi.ProcessStartResponse
	json.Unmarshal(resp, &r)
	running := callStarted(c).byID[r.ID]
	cancel()
	res := running.Wait(false)
	if res.Killed != "canceled" {
		t.Errorf("result %+v", res)
	}
}

// TestProcessReadLines: a read with lines answers whole lines only,
// whatever pieces the program writes them in (a line split across writes
// and a pause, a long line, CRLF, a blank line, an unfinished last line at
// the end), each with the host's reading: the offset and length of a
// plain string type, or unchecked (not one JSON object, not UTF-8, a type
// with escapes or not a string). Then the end (empty); timeout while no
// whole line is there; at most max_bytes but at least one line.
func TestProcessReadLines(t *testing.T) {
	e := newProcEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &hostfn.Call{Plugin: "p", Owner: "o", Grant: grantProcess([]string{"sh"}, []string{e.root}, false)}
	raw := func(name string, req any) (abi.Code, []byte) {
		b, _ := json.Marshal(req)
		return hostfntest.Call(ctx, e.defs[name], c, b)
	}
	start := func(script string) int {
		code, resp := raw("start", abi.ProcessStartRequest{Argv: []string{"sh", "-c", script}})
		var r abi.ProcessStartResponse
		if code != abi.OK || json.Unmarshal(resp, &r) != nil {
			t.Fatalf("start: %v %s", code, resp)
		}
		return r.ID
	}
	type line struct {
		text, typ string
		checked   bool
	}
	decode := func(b []byte) []line {
		n := int(binary.LittleEndian.Uint32(b))
		pos := 4 + abi.LineEntry*n
		var out []line
		for k := 0; k < n; k++ {
			e := b[4+abi.LineEntry*k:]
			l, ts, tl := int(binary.LittleEndian.Uint32(e)), binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:])
			ln := line{text: string(b[pos : pos+l])}
			if ts != abi.LineUnchecked {
				ln.typ, ln.checked = ln.text[ts:ts+tl], true
			}
			out = append(out, ln)
			pos += l
		}
		if pos != len(b) {
			t.Fatalf("%d bytes after the lines", len(b)-pos)
		}
		return out
	}
	long := strings.Repeat("x", 100<<10)
	id := start(`printf '{"type":"aoi:meta"}\n{"type":"hit",'; sleep 0.2; printf '"n":1}\r\n\nprose\n{"type":"h\\u0069t"}\n{"type":7}\n'; ` +
		`printf '{"type":"big","t":"` + long + `"}\n'; printf '{"type":"bad","t":"\377"}\n{"type":"last"}'`)
	var got []line
	for {
		code, b := raw("read", abi.ProcessReadRequest{ID: id, MaxBytes: 64, TimeoutMs: 5000, Lines: true})
		if code == abi.Timeout {
			continue
		}
		if code != abi.OK {
			t.Fatalf("read: %v %s", code, b)
		}
		if len(b) == 0 {
			break
		}
		ls := decode(b)
		size := 0
		for _, l := range ls {
			size += len(l.text) + abi.LineEntry
		}
		if len(ls) > 1 && size > 64 {
			t.Errorf("%d lines of %d bytes, max 64", len(ls), size)
		}
		got = append(got, ls...)
	}
	want := []line{
		{`{"type":"aoi:meta"}`, "aoi:meta", true},
		{"{\"type\":\"hit\",\"n\":1}\r", "hit", true},
		{"", "", false},
		{"prose", "", false},
		{`{"type":"h\u0069t"}`, "", false},
		{`{"type":7}`, "", false},
		{`{"type":"big","t":"` + long + `"}`, "big", true},
		{"{\"type\":\"bad\",\"t\":\"\xff\"}", "", false},
		{`{"type":"last"}`, "last", true},
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %.80v, want %.80v", i+1, got[i], want[i])
		}
	}
	// the end stays the end
	if code, b := raw("read", abi.ProcessReadRequest{ID: id, Lines: true}); code != abi.OK || len(b) != 0 {
		t.Errorf("after the end: %v %q", code, b)
	}
	raw("wait", abi.ProcessWaitRequest{ID: id})

	// a flood of empty lines: the index counts toward max_bytes
	id = start(`i=0; while [ $i -lt 3000 ]; do echo; i=$((i+1)); done`)
	lines := 0
	for {
		code, b := raw("read", abi.ProcessReadRequest{ID: id, MaxBytes: 1200, TimeoutMs: 5000, Lines: true})
		if code == abi.Timeout {
			continue
		}
		if code != abi.OK {
			t.Fatalf("read: %v", code)
		}
		if len(b) == 0 {
			break
		}
		if len(b) > 4+1200 {
			t.Fatalf("a response of %d bytes, max_bytes 1200", len(b))
		}
		lines += len(decode(b))
	}
	if lines != 3000 {
		t.Errorf("%d empty lines, want 3000", lines)
	}
	raw("wait", abi.ProcessWaitRequest{ID: id})

	// an unfinished line is not answered until it is whole
	id = start(`printf '{"type":"half'; sleep 30`)
	if code, _ := raw("read", abi.ProcessReadRequest{ID: id, TimeoutMs: 300, Lines: true}); code != abi.Timeout {
		t.Errorf("an unfinished line: %v", code)
	}
	raw("wait", abi.ProcessWaitRequest{ID: id, Kill: true})
}
