package plugin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
)

// TestEchoCAnswersAsGo: the C echo (plugins/examples/echo-c), which the
// benchmarks serve to see the host's share of a call alone, answers every
// valid input byte for byte as the Go echo does (escapes, control
// characters, surrogate pairs, a text of 100 kB), and a missing,
// non-string or unreadable text with an error result.
func TestEchoCAnswersAsGo(t *testing.T) {
	goDir, cDir := t.TempDir(), t.TempDir()
	testplugins.Package(t, goDir, "plugins/examples/echo", nil, nil)
	testplugins.Package(t, cDir, "plugins/examples/echo-c", nil, nil)
	goReg, cReg := newRegistry(t, goDir), newRegistry(t, cDir)
	ctx := context.Background()
	for _, args := range []string{
		`{"text":"hi"}`,
		`{"text":""}`,
		`{"text":"quote \" backslash \\ newline \n tab \t nul \u0000 bell \u0007"}`,
		`{"text":"é ☃ 😀 \ud83d\ude00"}`,
		`{"text":"` + strings.Repeat("long ", 20000) + `"}`,
		`{ "text" : "spaced" }`,
	} {
		want, err := goReg.CallTool(ctx, plugin.CallRequest{Name: "echo", Args: []byte(args)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := cReg.CallTool(ctx, plugin.CallRequest{Name: "echo", Args: []byte(args)})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("echo %.60s: C answered\n%.200s\nGo answered\n%.200s", args, got, want)
		}
	}
	// inputs the host's schema check would refuse, sent to the plugin
	// directly: an error result, never a trap or a result of another shape
	for _, args := range []string{`{}`, `{"text":3}`, `{"text":"unterminated`, `[1,2]`, `{"other":"x"}`} {
		got, err := cReg.CallTool(ctx, plugin.CallRequest{Name: "echo", Args: []byte(args)})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != `{"content":[{"type":"text","text":"text is required"}],"isError":true}` {
			t.Errorf("echo %s: %s", args, got)
		}
	}
	if _, err := cReg.CallTool(ctx, plugin.CallRequest{Name: "nope", Args: []byte(`{}`)}); err != plugin.ErrUnknownTool {
		t.Errorf("unknown tool: %v", err)
	}
}

// BenchmarkCallEchoC is BenchmarkCallEcho on the C echo: the host's share
// of an in-process call with a guest that does almost nothing.
func BenchmarkCallEchoC(b *testing.B) { benchCallEcho(b, "plugins/examples/echo-c") }
