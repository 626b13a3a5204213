package main

import (
	"errors"
	"strings"
	"testing"
)

func TestCatN(t *testing.T) {
	got := catN("a\nb\n", "/tmp/f", 1)
	want := "Here's the result of running `cat -n` on /tmp/f:\n     1\ta\n     2\tb\n     3\t\n"
	if got != want {
		t.Errorf("catN = %q, want %q", got, want)
	}
	long := strings.Repeat("x", maxResponseChars+10)
	if got := catN(long, "f", 1); !strings.Contains(got, fileClippedNotice) {
		t.Error("no clipped notice")
	}
}

func TestViewRange(t *testing.T) {
	text := "l1\nl2\nl3\nl4\nl5\n"
	out, msg := viewRange(text, "/f", []int{2, 3})
	if msg != "" || out != "Here's the result of running `cat -n` on /f:\n     2\tl2\n     3\tl3\n" {
		t.Errorf("[2,3]: %q %q", out, msg)
	}
	out, _ = viewRange(text, "/f", []int{4, -1})
	if !strings.HasSuffix(out, "     4\tl4\n     5\tl5\n") {
		t.Errorf("[4,-1]: %q", out)
	}
	out, _ = viewRange(text, "/f", []int{5, 9})
	if !strings.HasSuffix(out, "\nNOTE: We only show up to 5 since there's only 5 lines in this file\n") {
		t.Errorf("[5,9]: %q", out)
	}
	for _, c := range []struct {
		vr  []int
		msg string
	}{
		{[]int{1}, "Invalid `view_range` parameter: [1]. It should be a list of two integers."},
		{[]int{0, 2}, "Invalid `view_range` parameter: [0, 2]. Its first element `0` should be within the range of lines of the file: [1, 5]."},
		{[]int{6, 7}, "Invalid `view_range` parameter: [6, 7]. Its first element `6` should be within the range of lines of the file: [1, 5]."},
		{[]int{3, 2}, "Invalid `view_range` parameter: [3, 2]. Its second element `2` should be greater than or equal to the first element `3`."},
	} {
		if _, msg := viewRange(text, "/f", c.vr); msg != c.msg {
			t.Errorf("%v: %q, want %q", c.vr, msg, c.msg)
		}
	}
}

func TestStrReplace(t *testing.T) {
	text := "a x b\nx\nc x\n"
	if r := strReplace(text, "y", "z", ""); r.errMsg != notFoundText {
		t.Errorf("not found: %+v", r)
	}
	if r := strReplace(text, "x", "z", ""); r.errMsg != multipleText {
		t.Errorf("multiple: %+v", r)
	}
	if r := strReplace(text, "x", "z", "ALL"); r.newText != "a z b\nz\nc z\n" || r.line != 1 {
		t.Errorf("ALL: %+v", r)
	}
	if r := strReplace(text, "x", "z", "FIRST"); r.newText != "a z b\nx\nc x\n" || r.line != 1 {
		t.Errorf("FIRST: %+v", r)
	}
	if r := strReplace(text, "x", "z", "LAST"); r.newText != "a x b\nx\nc z\n" || r.line != 3 {
		t.Errorf("LAST: %+v", r)
	}
	if r := strReplace(text, "c x", "C", ""); r.newText != "a x b\nx\nC\n" || r.line != 3 {
		t.Errorf("unique: %+v", r)
	}
}

func TestInsert(t *testing.T) {
	cases := []struct {
		text string
		n    int
		new  string
		want string
	}{
		{"l1\nl2\n", 0, "top", "top\nl1\nl2\n"},
		{"l1\nl2\n", 1, "mid", "l1\nmid\nl2\n"},
		{"l1\nl2\n", 2, "end", "l1\nl2\nend\n"},
		{"l1\nl2", 2, "end", "l1\nl2\nend\n"},
		{"", 0, "a\nb", "a\nb\n"},
	}
	for _, c := range cases {
		if got := insertText(c.text, c.n, c.new); got != c.want {
			t.Errorf("insert(%q, %d, %q) = %q, want %q", c.text, c.n, c.new, got, c.want)
		}
	}
	if countLines("a\nb") != 2 || countLines("a\nb\n") != 2 || countLines("") != 0 {
		t.Error("countLines")
	}
}

func TestSnippets(t *testing.T) {
	var lines []string
	for i := 1; i <= 20; i++ {
		lines = append(lines, "line"+string(rune('a'+i)))
	}
	text := strings.Join(lines, "\n") + "\n"
	r := strReplace(text, "linek", "NEW", "")
	out := replaceSnippet(r.newText, "/f", "NEW", r.line)
	if !strings.HasPrefix(out, "The file /f has been edited. Here's the result of running `cat -n` on a snippet of /f:\n     7\tlineh\n") ||
		!strings.Contains(out, "    10\tNEW\n") || !strings.HasSuffix(out, "    14\tlineo\n    15\t\n"+editedReview) {
		t.Errorf("replace snippet:\n%s", out)
	}
	newText := insertText(text, 10, "INS")
	out = insertSnippet(newText, 20, 10, "INS")
	if !strings.HasPrefix(out, "Here's the result of running `cat -n` on a snippet of the edited file:\n     7\tlineh\n") ||
		!strings.Contains(out, "    11\tINS\n") {
		t.Errorf("insert snippet:\n%s", out)
	}
}

type mapKV map[string]string

func (m mapKV) Get(k string) (string, bool, error) { v, ok := m[k]; return v, ok, nil }
func (m mapKV) Set(k, v string) error {
	if len(v) > 200 {
		return errors.New("too large")
	}
	m[k] = v
	return nil
}
func (m mapKV) Delete(k string) error { delete(m, k); return nil }

func TestHistory(t *testing.T) {
	m := mapKV{}
	store = m
	defer func() { store = stateKV{} }()
	pushHistory("/f", version{Absent: true})
	for i := 0; i < 12; i++ {
		pushHistory("/f", version{Content: "v" + string(rune('a'+i))})
	}
	// The budget (200 bytes) halves the stack; the newest survive.
	v, ok := popHistory("/f")
	if !ok || v.Content != "vl" {
		t.Fatalf("pop = %+v %v", v, ok)
	}
	n := 1
	for {
		if _, ok := popHistory("/f"); !ok {
			break
		}
		n++
	}
	if n > maxLevels || n < 2 {
		t.Errorf("levels kept: %d", n)
	}
	if len(m) != 0 {
		t.Errorf("store not emptied: %v", m)
	}
	pushHistory("/g", version{Absent: true})
	if v, ok := popHistory("/g"); !ok || !v.Absent {
		t.Errorf("absent: %+v", v)
	}
}
