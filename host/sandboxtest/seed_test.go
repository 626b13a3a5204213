package sandboxtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/runtime/runtimetest"
)

// exchange is one JSON-RPC request of a golden test. DIR in body stands for
// the test's own directory, which the golden files show as /tmp so that they
// read like seed 000 (its requests use /tmp/agent-*.txt).
type exchange struct {
	name string
	body string
}

// runGolden sends each request and compares the request and the response,
// byte for byte, with testdata/<dir>/<name>.{request,response}.json.
func runGolden(t *testing.T, golden string, steps []exchange) {
	runGoldenOn(t, runtimetest.Default, golden, steps)
}

// runGoldenOn is runGolden on the named engine.
func runGoldenOn(t *testing.T, engine, golden string, steps []exchange) {
	s := sharedServerOn(t, "", engine)
	dir := tmpDir(t)
	norm := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(dir), []byte("/tmp")) }
	for _, st := range steps {
		body := []byte(strings.ReplaceAll(st.body, "DIR", dir))
		status, resp := s.post(t, body)
		if status != 200 {
			t.Errorf("%s: HTTP %d, want 200", st.name, status)
		}
		s.checkExchange(t, body, resp) // schema_test.go
		for _, f := range []struct {
			ext string
			got []byte
		}{{"request", norm(body)}, {"response", norm(resp)}} {
			p := filepath.Join("testdata", golden, st.name+"."+f.ext+".json")
			got := append(f.got, '\n')
			if *update {
				must(t, os.MkdirAll(filepath.Dir(p), 0o755))
				must(t, os.WriteFile(p, got, 0o644))
				continue
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s differs from %s:\ngot:  %s\nwant: %s", st.name, f.ext, p, got, want)
			}
		}
	}
}

// TestSeedWorkflow is seed 000's four calls: write the numbers, count the
// lines with bash, sum them in Python, read the result back (27).
func TestSeedWorkflow(t *testing.T) { onEngines(t, testSeedWorkflow) }

func testSeedWorkflow(t *testing.T, engine string) {
	runGoldenOn(t, engine, "seed000", []exchange{
		{"1-write", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_file_operations","arguments":{"action":"write","path":"DIR/agent-data.txt","content":"3\n7\n12\n5\n"}}}`},
		{"2-bash", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_execute_bash","arguments":{"cmd":"wc -l DIR/agent-data.txt","cwd":"DIR"}}}`},
		{"3-python", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sandbox_execute_code","arguments":{"language":"python","code":"nums = [int(n) for n in open(\"DIR/agent-data.txt\").read().split()]\nopen(\"DIR/agent-result.txt\", \"w\").write(str(sum(nums)))\nprint(\"sum written\")"}}}`},
		{"4-read", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"sandbox_file_operations","arguments":{"action":"read","path":"DIR/agent-result.txt"}}}`},
	})
}

// TestSeedFailures is seed 000's two failure shapes: an unknown tool is a
// JSON-RPC error; a missing file is a result with isError and aiod's
// structured file error.
func TestSeedFailures(t *testing.T) {
	defaultEngine(t, "an unknown tool and a file error: the MCP layer and the plugin's logic")
	runGolden(t, "seed000", []exchange{
		{"5-unknown-tool", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sandbox_execute","arguments":{}}}`},
		{"6-missing-file", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"sandbox_file_operations","arguments":{"action":"read","path":"DIR/agent-missing.txt"}}}`},
	})
}
