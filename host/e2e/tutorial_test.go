package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tutorialLines returns the commands of README.md's "Write a plugin"
// tutorial: the lines of its ```sh tutorial block.
func tutorialLines(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```sh tutorial\n")
	if !ok {
		t.Fatal("README.md has no ```sh tutorial block")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatal("README.md: the tutorial block is not closed")
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// curlBody is the JSON body of a `curl ... -d '{...}'` line.
func curlBody(line string) (string, bool) {
	_, rest, ok := strings.Cut(line, " -d '")
	if !ok {
		return "", false
	}
	body, _, ok := strings.Cut(rest, "'")
	return body, ok
}

// TestTenMinutes follows README.md's "Write a plugin" tutorial word for
// word in an empty directory, once per language (--lang go in the README
// becomes each language): aiod plugin new, build --into, test, then
// aiod start on the plugins directory and the tool called over MCP. It
// prints each step's wall time; the target is under two minutes
// of waiting on commands per language, which it checks.
func TestTenMinutes(t *testing.T) {
	defaultEngine(t, "aiod plugin test runs the tutorial's module on every engine itself")
	t.Parallel() // CPU in its own processes: it overlaps the 60 s task run (TestBashTask)
	bin, _ := binaries(t)
	lines := tutorialLines(t)
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "aiod plugin new demo --lang go") {
		t.Fatalf("the tutorial should start with `aiod plugin new demo --lang go`: %q", lines)
	}
	path := authorPath(t) + string(os.PathListSeparator) + os.Getenv("PATH")
	summary := map[string]time.Duration{}
	for _, l := range tallyLangs {
		lang := l.lang
		t.Run(lang, func(t *testing.T) {
			cwd := t.TempDir() // empty
			var a *aiod
			var waited time.Duration
			called := false
			for _, line := range lines {
				line = strings.Replace(line, "--lang go", "--lang "+lang, 1)
				f := strings.Fields(line)
				began := time.Now()
				switch {
				case f[0] == "cd" && len(f) == 2:
					cwd = filepath.Join(cwd, f[1])
					continue
				case f[0] == "aiod" && len(f) > 1 && f[1] == "start":
					args := f[2:]
					for i := range args {
						if i > 0 && args[i-1] == "--plugins-dir" && !filepath.IsAbs(args[i]) {
							args[i] = filepath.Join(cwd, args[i])
						}
					}
					a = start(t, nil, args...)
				case f[0] == "aiod":
					cmd := exec.Command(bin, f[1:]...)
					cmd.Dir = cwd
					cmd.Env = append(os.Environ(), "PATH="+path)
					out, err := cmd.CombinedOutput()
					if err != nil {
						t.Fatalf("%s (in %s): %v\n%s", line, cwd, err, out)
					}
				case f[0] == "curl":
					if a == nil {
						t.Fatalf("%s: aiod is not started yet", line)
					}
					body, ok := curlBody(line)
					if !ok {
						t.Fatalf("cannot read the body of %q", line)
					}
					_, resp := post(t, a.URL, body, nil)
					var r struct {
						Result struct {
							Content []struct{ Text string } `json:"content"`
							IsError bool                    `json:"isError"`
						} `json:"result"`
					}
					if err := json.Unmarshal([]byte(resp), &r); err != nil || r.Result.IsError || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "Hello, Ada!" {
						t.Fatalf("%s: answered %s", line, resp)
					}
					called = true
				default:
					t.Fatalf("the tutorial has a line this test cannot follow: %q", line)
				}
				d := time.Since(began)
				waited += d
				t.Logf("%-15s %8s  %s", lang, d.Round(time.Millisecond), line)
			}
			if !called {
				t.Fatal("the tutorial never called the tool")
			}
			summary[lang] = waited
			t.Logf("%-15s %8s  waiting on commands in all", lang, waited.Round(time.Millisecond))
			if waited > 2*time.Minute {
				t.Errorf("%s: %s waiting on commands, the target is under 2 minutes", lang, waited)
			}
		})
	}
	fmt.Fprintf(os.Stderr, "TestTenMinutes: waiting on commands per language: %v\n", summary)
}
