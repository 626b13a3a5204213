package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Texts and limits of the openhands-aci editor that aiod's editor follows.
const (
	snippetWindow      = 4      // lines of context around an edit
	maxResponseChars   = 16_000 // a view is cut here, with the notice below
	maxFileBytes       = 10 << 20
	fileClippedNotice  = "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>"
	dirClippedNotice   = "<response clipped><NOTE>To save on context only part of this directory has been shown to you. You should use `ls -la` instead to view large directories incrementally.</NOTE>"
	editedReview       = "Review the changes and make sure they are as expected. Edit the file again if necessary."
	insertedReview     = "Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary."
	notFoundText       = "old_str not found in file"
	multipleText       = "old_str has multiple occurrences; replace_mode is required"
	allowedCommandList = "view, create, str_replace, insert, undo_edit"
)

// truncate cuts s after max characters and appends notice.
func truncate(s string, max int, notice string) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + notice
		}
		n++
	}
	return s
}

// catN numbers the lines of content as `cat -n` does (openhands-aci's
// _make_output): every "\n"-separated piece, from start, right-aligned in
// six columns and a tab, after a header naming what is shown.
func catN(content, desc string, start int) string {
	content = truncate(content, maxResponseChars, fileClippedNotice)
	var b strings.Builder
	b.WriteString("Here's the result of running `cat -n` on ")
	b.WriteString(desc)
	b.WriteString(":\n")
	for i, line := range strings.Split(content, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%6d\t%s", i+start, line)
	}
	b.WriteByte('\n')
	return b.String()
}

// countLines counts lines as Python's iteration over a file does: a last
// line without "\n" counts too.
func countLines(text string) int {
	n := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		n++
	}
	return n
}

// lineRange returns the lines from..to (1-based, inclusive) of text with
// their newlines, as openhands-aci's read_file(start_line, end_line).
func lineRange(text string, from, to int) string {
	ls := splitKeepAll(text)
	var b strings.Builder
	for i, l := range ls {
		if i+1 > to {
			break
		}
		if i+1 >= from {
			b.WriteString(l)
		}
	}
	return b.String()
}

// splitKeepAll splits text into lines keeping "\n" (the last may lack it).
func splitKeepAll(text string) []string {
	var out []string
	for text != "" {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

// pyList formats ints as Python prints a list: "[1, 2]".
func pyList(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// invalidParam is openhands-aci's EditorToolParameterInvalidError text.
func invalidParam(param, value, hint string) string {
	if hint == "" {
		return fmt.Sprintf("Invalid `%s` parameter: %s.", param, value)
	}
	return fmt.Sprintf("Invalid `%s` parameter: %s. %s", param, value, hint)
}

// missingParam is openhands-aci's EditorToolParameterMissingError text.
func missingParam(command, param string) string {
	return fmt.Sprintf("Parameter `%s` is required for command: %s.", param, command)
}

// viewRange renders lines [start, end] of text (view_range semantics),
// or an error message.
func viewRange(text, path string, vr []int) (string, string) {
	numLines := countLines(text)
	if len(vr) != 2 {
		return "", invalidParam("view_range", pyList(vr), "It should be a list of two integers.")
	}
	start, end := vr[0], vr[1]
	if start < 1 || start > numLines {
		return "", invalidParam("view_range", pyList(vr),
			fmt.Sprintf("Its first element `%d` should be within the range of lines of the file: %s.", start, pyList([]int{1, numLines})))
	}
	warning := ""
	switch {
	case end == -1:
		end = numLines
	case end > numLines:
		warning = fmt.Sprintf("We only show up to %d since there's only %d lines in this file", numLines, numLines)
		end = numLines
	}
	if end < start {
		return "", invalidParam("view_range", pyList(vr),
			fmt.Sprintf("Its second element `%d` should be greater than or equal to the first element `%d`.", end, start))
	}
	part := lineRange(text, start, end)
	// '\n'.join(content.splitlines()): drop the line terminators' tail.
	part = strings.Join(splitLinesPy(part), "\n")
	out := catN(part, path, start)
	if warning != "" {
		out += "\nNOTE: " + warning + "\n"
	}
	return out, ""
}

// splitLinesPy is Python's str.splitlines for "\n", "\r\n" and "\r".
func splitLinesPy(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return out
}

// occurrences returns the byte offsets of the non-overlapping occurrences
// of old in text.
func occurrences(text, old string) []int {
	var at []int
	for i := 0; ; {
		j := strings.Index(text[i:], old)
		if j < 0 {
			return at
		}
		at = append(at, i+j)
		i += j + len(old)
	}
}

// replaceResult is the outcome of a str_replace on text.
type replaceResult struct {
	newText string
	line    int // 1-based line of the (first) replaced occurrence
	errMsg  string
}

// strReplace applies old -> new with replace mode mode ("" for a unique
// match, ALL, FIRST or LAST).
func strReplace(text, old, new, mode string) replaceResult {
	at := occurrences(text, old)
	if len(at) == 0 {
		return replaceResult{errMsg: notFoundText}
	}
	if len(at) > 1 && mode == "" {
		return replaceResult{errMsg: multipleText}
	}
	var out string
	idx := at[0]
	switch mode {
	case "ALL":
		out = strings.ReplaceAll(text, old, new)
	case "LAST":
		idx = at[len(at)-1]
		out = text[:idx] + new + text[idx+len(old):]
	default: // unique, FIRST
		out = text[:idx] + new + text[idx+len(old):]
	}
	return replaceResult{newText: out, line: strings.Count(text[:idx], "\n") + 1}
}

// replaceSnippet is the edited file's snippet after a str_replace.
func replaceSnippet(newText, path, new string, line int) string {
	start := max(0, line-snippetWindow)
	end := line + snippetWindow + strings.Count(new, "\n")
	snippet := lineRange(newText, start+1, end)
	return "The file " + path + " has been edited. " + catN(snippet, "a snippet of "+path, start+1) + editedReview
}

// insertText inserts new after line n (0: at the top) of text; the
// inserted lines each end in "\n". A last line lacking its "\n" gets one
// before text is inserted after it.
func insertText(text string, n int, new string) string {
	ls := splitKeepAll(text)
	var b strings.Builder
	for _, l := range ls[:n] {
		b.WriteString(l)
	}
	if n > 0 && !strings.HasSuffix(ls[n-1], "\n") {
		b.WriteByte('\n')
	}
	for _, l := range strings.Split(new, "\n") {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	for _, l := range ls[n:] {
		b.WriteString(l)
	}
	return b.String()
}

// insertSnippet is the edited file's snippet after an insert.
func insertSnippet(newText string, numLines, n int, new string) string {
	newLines := len(strings.Split(new, "\n"))
	start := max(0, n-snippetWindow)
	end := min(numLines+newLines, n+snippetWindow+newLines)
	snippet := lineRange(newText, start+1, end)
	return catN(snippet, "a snippet of the edited file", max(1, n-snippetWindow+1))
}
