package e2e

import (
	"strings"
	"testing"
)

// TestProgressTSv2: the TypeScript SDK v2 client, in both eras, gets
// sandbox_execute_bash's output lines as progress while the command runs
// (a few a second, increasing), and the same result with and without a
// progress token (seed 002: progress only when the client sent a token).
func TestProgressTSv2(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "progress notifications: the host's MCP layer")
	a := start(t, nil)
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			r := runNode(t, nil, clientScript("ts-v2-progress.mjs"), a.URL, era)
			ps, _ := r["progress"].([]any)
			ms, _ := r["ms"].(float64)
			if len(ps) < 3 || float64(len(ps)) > ms/250+2 {
				t.Fatalf("%d progress notifications in %.0f ms: %v", len(ps), ms, ps)
			}
			t.Logf("%d progress notifications in %.0f ms", len(ps), ms)
			var lines []string
			prev := 0.0
			for _, p := range ps {
				m := p.(map[string]any)
				pr, _ := m["progress"].(float64)
				if pr <= prev {
					t.Errorf("progress %v after %v", pr, prev)
				}
				prev = pr
				msg, _ := m["message"].(string)
				lines = append(lines, strings.Split(msg, "\n")...)
			}
			if j := strings.Join(lines, ","); j != "line1,line2,line3,line4,line5,line6" {
				t.Errorf("messages: %s", j)
			}
			// the first line arrived while the command still ran
			if first := ps[0].(map[string]any)["at"].(float64); first > ms-500 {
				t.Errorf("first progress at %.0f ms of %.0f: not while running", first, ms)
			}
			if r["extra"] != float64(0) {
				t.Errorf("%v progress notifications without a token", r["extra"])
			}
			text := func(k string) string {
				res, _ := r[k].(map[string]any)
				c, _ := res["content"].([]any)
				if len(c) != 1 {
					t.Fatalf("%s: %v", k, res)
				}
				s, _ := c[0].(map[string]any)["text"].(string)
				return s
			}
			if w, wo := text("withToken"), text("without"); w != wo || !strings.Contains(w, `"output":"line1\nline2`) {
				t.Errorf("results differ or lack the output:\n%s\n%s", w, wo)
			}
		})
	}
}
