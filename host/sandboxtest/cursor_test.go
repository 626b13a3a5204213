package sandboxtest

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestBashCursor: output cut at 30,000 characters says so (truncated,
// next_cursor), and calling the tool with {"cursor": next_cursor} returns
// the following parts, each at most 30,000 characters, until the last,
// which has no next_cursor; together they are the whole output. A spent
// or unknown cursor is an error; an output that is not cut has neither
// field.
func TestBashCursor(t *testing.T) {
	defaultEngine(t, "the shell session's cursor: the plugin's logic")
	s := sharedServer(t, "")
	notice := "\n... [output truncated to the first 30000 characters; call again with truncate: false for the full output]"
	for _, c := range []struct {
		name, cmd string
		want      func() string
		exit      float64
	}{
		{"lines", "seq 1 40000; exit 4", func() string {
			var b strings.Builder
			for i := 1; i <= 40000; i++ {
				b.WriteString(itoa(i) + "\n")
			}
			return b.String()
		}, 4},
		{"multibyte", "yes é | head -c 129999 | tr -d '\\n'", func() string { return strings.Repeat("é", 43333) }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := tmpDir(t)
			m, isErr := sh(t, s, map[string]any{"cmd": c.cmd, "cwd": d})
			out, _ := m["output"].(string)
			next, _ := m["next_cursor"].(string)
			if isErr || m["truncated"] != true || next == "" || !strings.HasSuffix(out, notice) || m["exit_code"] != c.exit {
				t.Fatalf("first page: truncated %v, next_cursor %q, exit %v, tail %q", m["truncated"], next, m["exit_code"], out[max(0, len(out)-150):])
			}
			all := strings.TrimSuffix(out, notice)
			if n := utf8.RuneCountInString(all); n != 30000 {
				t.Errorf("first page: %d characters", n)
			}
			pages := 1
			var spent string
			for next != "" {
				spent = next
				r := s.call(t, "sandbox_execute_bash", map[string]any{"cursor": next})
				if r.IsError {
					t.Fatalf("page %d: %s", pages+1, r.Text())
				}
				p := r.Object(t)
				part := p["output"].(string)
				if n := utf8.RuneCountInString(part); n > 30000 || n == 0 {
					t.Errorf("page %d: %d characters", pages+1, n)
				}
				if p["status"] != "completed" || p["exit_code"] != c.exit || p["cwd"] != d {
					t.Errorf("page %d: status %v exit %v cwd %v", pages+1, p["status"], p["exit_code"], p["cwd"])
				}
				next, _ = p["next_cursor"].(string)
				if p["truncated"] != (next != "") {
					t.Errorf("page %d: truncated %v with next_cursor %q", pages+1, p["truncated"], next)
				}
				all += part
				pages++
				if pages > 20 {
					t.Fatal("no end to the pages")
				}
			}
			want := c.want()
			if all != want {
				t.Errorf("pages joined: %d bytes, want %d", len(all), len(want))
			}
			if wantPages := (utf8.RuneCountInString(want) + 29999) / 30000; pages != wantPages {
				t.Errorf("%d pages, want %d", pages, wantPages)
			}
			for _, bad := range []string{spent, "1.00.0", "nonsense"} {
				r := s.call(t, "sandbox_execute_bash", map[string]any{"cursor": bad})
				if !r.IsError || !strings.Contains(r.Text(), "unknown or expired cursor") {
					t.Errorf("cursor %q: isError %v %q", bad, r.IsError, r.Text())
				}
			}
		})
	}
	m := shOK(t, s, map[string]any{"cmd": "head -c 30000 /dev/zero | tr '\\0' a"})
	if _, ok := m["truncated"]; ok || m["next_cursor"] != nil || len(m) != 4 {
		t.Errorf("output of exactly 30000 characters: %v", m["truncated"])
	}
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}
