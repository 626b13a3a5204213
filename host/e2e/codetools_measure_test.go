package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFiftyFiles measures the task of spec/code-tools.md's example (and
// BENCHMARKS.md's "Programs that call tools"): count a word over 50 files,
// done as 50 sandbox_file_operations calls through MCP (the model reads
// every file and counts) and as one sandbox_execute_code program that
// reads them through tools and prints the count. Both must find the
// count the files were written with; it logs, for each way, the tokens
// the model is returned (bytes/4 of the results' text), the tokens it
// writes (the calls' arguments, or the program) and the wall time (the
// median of five rounds), and fails if the program returns more tokens
// than the calls.
func TestFiftyFiles(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "a measurement of the protocol's round trips against one program's (TestCodeTools runs programs on every engine)")
	a := start(t, nil, "--code-tools", "sandbox_file_operations")
	dir := t.TempDir()
	words := []string{"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "eiusmod", "tempor", "aiod"}
	r := rand.New(rand.NewPCG(29, 3))
	want := 0
	for i := range 50 {
		var b strings.Builder
		for j := range 400 { // ~2.5 KB a file
			w := words[r.IntN(len(words))]
			if w == "aiod" {
				want++
			}
			b.WriteString(w)
			if j%12 == 11 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("doc%02d.txt", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs := goSDK(t, a.URL, "", "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	text := func(res *mcp.CallToolResult) string {
		var s []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				s = append(s, tc.Text)
			}
		}
		return strings.Join(s, "\n")
	}
	callTool := func(name string, args map[string]any) (string, int) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		b, _ := json.Marshal(args)
		return text(res), len(b)
	}

	// 50 calls: the model reads each file and counts
	calls := func() (count, returned, written int) {
		for i := range 50 {
			out, in := callTool("sandbox_file_operations", map[string]any{"action": "read", "path": filepath.Join(dir, fmt.Sprintf("doc%02d.txt", i))})
			var r struct{ Content string }
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("read: %v: %s", err, out)
			}
			count += len(slices.DeleteFunc(strings.Fields(r.Content), func(w string) bool { return w != "aiod" }))
			returned += len(out)
			written += in
		}
		return count, returned, written
	}
	// one program
	code := fmt.Sprintf(`import json, time
t = time.monotonic()
n = 0
for i in range(50):
    text = json.loads(tools.sandbox_file_operations(action="read", path="%s/doc%%02d.txt" %% i))["content"]
    n += text.split().count("aiod")
print("aiod:", n, "in %%.1f ms" %% ((time.monotonic() - t) * 1000))`, dir)
	var inCalls []float64
	program := func() (count, returned, written int) {
		out, in := callTool("sandbox_execute_code", map[string]any{"language": "python", "code": code})
		var r struct{ Status, Stdout string }
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Status != "ok" {
			t.Fatalf("program: %v: %s", err, out)
		}
		var ms float64
		if _, err := fmt.Sscanf(r.Stdout, "aiod: %d in %f ms", &count, &ms); err != nil {
			t.Fatalf("program printed %q", r.Stdout)
		}
		inCalls = append(inCalls, ms)
		return count, len(out), in
	}

	// the interpreter's start, what the program pays besides its calls
	empty := func() (int, int, int) {
		out, in := callTool("sandbox_execute_code", map[string]any{"language": "python", "code": "pass"})
		if !strings.Contains(out, `"status":"ok"`) {
			t.Fatalf("empty program: %s", out)
		}
		return want, len(out), in
	}

	type figures struct {
		returned, written int
		wall              time.Duration
	}
	measure := func(name string, f func() (int, int, int)) figures {
		var walls []time.Duration
		var fig figures
		for range 5 {
			start := time.Now()
			n, ret, wr := f()
			walls = append(walls, time.Since(start))
			if n != want {
				t.Fatalf("%s counted %d, the files hold %d", name, n, want)
			}
			fig.returned, fig.written = ret, wr
		}
		slices.Sort(walls)
		fig.wall = walls[len(walls)/2]
		return fig
	}
	c, p, e := measure("50 calls", calls), measure("one program", program), measure("an empty program", empty)
	slices.Sort(inCalls)
	t.Logf("the program's 50 calls, timed inside it: median %.1f ms", inCalls[len(inCalls)/2])
	t.Logf("count %d over 50 files of ~2.5 KB; tokens as bytes/4; wall time the median of 5 rounds", want)
	t.Logf("| way | tool calls the model makes | tokens returned to the model | tokens the model writes | wall time |")
	t.Logf("| 50 tool calls through MCP | 50 | %d | %d | %.1f ms |", c.returned/4, c.written/4, float64(c.wall.Microseconds())/1000)
	t.Logf("| one program | 1 | %d | %d | %.1f ms |", p.returned/4, p.written/4, float64(p.wall.Microseconds())/1000)
	t.Logf("| (an empty program: the interpreter's start) | 1 | %d | %d | %.1f ms |", e.returned/4, e.written/4, float64(e.wall.Microseconds())/1000)
	if p.returned >= c.returned {
		t.Errorf("the program returned %d bytes, the 50 calls %d", p.returned, c.returned)
	}
}
