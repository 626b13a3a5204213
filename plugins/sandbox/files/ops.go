package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/files"
)

// Limits, as aiod documents them.
const (
	listCap         = 10_000  // list and find stop here (truncated)
	walkCap         = 100_000 // the most entries one walk may return
	grepDefault     = 500     // grep max_results default
	grepMax         = 10_000
	grepMaxFileSize = 1 << 20 // grep skips larger files
	globDefault     = 5_000   // glob max_results default
	globMax         = 50_000
	contextMax      = 20
	binarySniff     = 8000 // bytes checked for a NUL to call a file binary
)

// decodeError is aiod's structured error for a non-UTF-8 file read as text.
func decodeError(op, p string) error {
	return &files.Error{
		Code: "invalid", ErrorType: "decode_error", ExceptionType: "UnicodeDecodeError",
		Message: "Failed to " + op + " file: stream did not contain valid UTF-8", Operation: op, Path: p,
	}
}

// encodingOf normalizes the encoding argument ("" when unsupported).
func encodingOf(a Args) string {
	if a.Encoding == nil {
		return "utf-8"
	}
	switch strings.ToLower(strings.TrimSpace(*a.Encoding)) {
	case "", "utf-8", "utf8":
		return "utf-8"
	case "base64":
		return "base64"
	case "raw":
		return "raw"
	}
	return ""
}

func unsupportedEncoding(a Args) *sdk.Result {
	return fail(a, "Unsupported encoding: "+*a.Encoding+". Supported encodings: utf-8, base64, raw")
}

func read(a Args) *sdk.Result {
	enc := encodingOf(a)
	if enc == "" {
		return unsupportedEncoding(a)
	}
	opts := &files.ReadOptions{StartLine: a.StartLine, EndLine: a.EndLine}
	if enc == "utf-8" {
		// the content stays on the host, which writes it into the answer
		t, err := files.ReadText(a.Path, opts)
		if err != nil {
			return fileErr(a, err)
		}
		if !t.ValidUTF8() {
			return fileErr(a, decodeError("read", a.Path))
		}
		return ok(a, map[string]any{"content": t})
	}
	b, err := files.Read(a.Path, opts)
	if err != nil {
		return fileErr(a, err)
	}
	var s string
	switch enc {
	case "base64":
		s = base64.StdEncoding.EncodeToString(b)
	case "raw":
		s = latin1(b)
	}
	return ok(a, map[string]any{"content": s})
}

// latin1 maps each byte to the character of the same number.
func latin1(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for _, c := range b {
		sb.WriteRune(rune(c))
	}
	return sb.String()
}

func write(a Args) *sdk.Result {
	if a.Content == nil {
		return fail(a, "Content is required for write operation")
	}
	var data []byte
	switch encodingOf(a) {
	case "utf-8":
		data = []byte(*a.Content)
	case "base64":
		d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(*a.Content))
		if err != nil {
			return fail(a, "Invalid base64 content: "+err.Error())
		}
		data = d
	case "raw":
		for _, r := range *a.Content {
			if r > 0xff {
				return fail(a, "Invalid raw content: characters above U+00FF cannot be written as single bytes")
			}
			data = append(data, byte(r))
		}
		if data == nil {
			data = []byte{}
		}
	default:
		return unsupportedEncoding(a)
	}
	n, err := files.Write(a.Path, data, &files.WriteOptions{Append: a.Append})
	if err != nil {
		return fileErr(a, err)
	}
	return ok(a, map[string]any{"bytes_written": n})
}

// readText reads a whole file as UTF-8 text.
func readText(a Args, op string) (string, *sdk.Result) {
	b, err := files.Read(a.Path, nil)
	if err != nil {
		return "", fileErr(a, err)
	}
	if !utf8.Valid(b) {
		return "", fileErr(a, decodeError(op, a.Path))
	}
	return string(b), nil
}

func replace(a Args) *sdk.Result {
	if a.Content == nil || *a.Content == "" || a.Target == nil {
		return fail(a, "Both content (old_str) and target (new_str) are required for replace operation")
	}
	text, res := readText(a, "read")
	if res != nil {
		return res
	}
	n := strings.Count(text, *a.Content)
	if n > 0 {
		if _, err := files.Write(a.Path, []byte(strings.ReplaceAll(text, *a.Content, *a.Target)), nil); err != nil {
			return fileErr(a, err)
		}
	}
	return ok(a, map[string]any{"replaced_count": n})
}

// compileRegex builds the regular expression of search and grep.
func compileRegex(pattern string, fixed, fold bool) (*regexp.Regexp, error) {
	if fixed {
		pattern = regexp.QuoteMeta(pattern)
	}
	if fold {
		pattern = "(?i)" + pattern
	}
	return regexp.Compile(pattern)
}

// splitLines splits text into lines without their terminators ("\n" or
// "\r\n"); a final terminator does not start another line.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

func search(a Args) *sdk.Result {
	if a.Content == nil || *a.Content == "" {
		return fail(a, "Content (regex pattern) is required for search operation")
	}
	re, err := compileRegex(*a.Content, a.FixedStrings, a.CaseInsensitive)
	if err != nil {
		return fail(a, "Invalid regex pattern: "+err.Error())
	}
	text, res := readText(a, "read")
	if res != nil {
		return res
	}
	matches, numbers := []string{}, []int{}
	for i, l := range splitLines(text) {
		if re.MatchString(l) {
			matches = append(matches, l)
			numbers = append(numbers, i)
		}
	}
	return ok(a, map[string]any{"matches": matches, "line_numbers": numbers, "match_count": len(matches)})
}

func patternOf(a Args) string {
	if a.Pattern == nil {
		return ""
	}
	return *a.Pattern
}

// relOf returns the path of an entry relative to base.
func relOf(base, p string) string {
	if base == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(strings.TrimPrefix(p, base), "/")
}

// hiddenBelow reports whether rel has a hidden component.
func hiddenBelow(rel string) bool {
	for _, s := range strings.Split(rel, "/") {
		if s != "." && hidden(s) {
			return true
		}
	}
	return false
}

// excluded reports whether rel or one of its ancestors matches a filter.
func excluded(globs []string, rel string) bool {
	if len(globs) == 0 {
		return false
	}
	segs := strings.Split(rel, "/")
	for i := range segs {
		if anyMatch(globs, segs[i], strings.Join(segs[:i+1], "/")) {
			return true
		}
	}
	return false
}

func isoTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func find(a Args) *sdk.Result {
	pat := patternOf(a)
	if pat == "" {
		return fail(a, "Pattern is required for find operation")
	}
	g, err := compileGlob(pat)
	if err != nil {
		return fail(a, "Invalid glob pattern: "+pat)
	}
	depth := 0 // a name pattern matches at any depth
	if g.hasSlash() {
		depth = g.maxDepth()
	}
	w, err := files.Walk(a.Path, &files.WalkOptions{MaxDepth: depth, MaxEntries: walkCap})
	if err != nil {
		return fileErr(a, err)
	}
	found := []string{}
	truncated := w.Truncated
	for _, e := range w.Entries {
		rel := relOf(w.Path, e.Path)
		var m bool
		if g.hasSlash() {
			m = g.match(rel, a.ShowHidden)
		} else {
			m = matchName(g.segs[0], e.Name, a.ShowHidden) &&
				(a.ShowHidden || !hiddenBelow(path.Dir(rel)))
		}
		if !m {
			continue
		}
		if len(found) == listCap {
			truncated = true
			break
		}
		found = append(found, e.Path)
	}
	return ok(a, map[string]any{"files": found, "file_count": len(found), "truncated": truncated})
}

// entryInfo is a list entry: a symbolic link is classified by what it
// points at (a link to a directory counts as a directory).
func entryInfo(e files.Entry) map[string]any {
	isDir := e.IsDirectory
	size, mtime := e.Size, e.ModifiedTime
	if e.IsSymlink {
		if st, err := files.Stat(e.Path); err == nil {
			isDir, size, mtime = st.IsDirectory, st.Size, st.ModifiedTime
		}
	}
	var ext any
	if !isDir {
		if x := path.Ext(e.Name); x != "" && x != e.Name {
			ext = x
		}
	}
	m := map[string]any{
		"name": e.Name, "path": e.Path, "is_directory": isDir, "size": size,
		"extension": ext, "modified_time": isoTime(mtime),
	}
	if hidden(e.Name) {
		m["is_hidden"] = true
	}
	return m
}

func wantType(types []string, name string) bool {
	if len(types) == 0 {
		return true
	}
	ext := strings.ToLower(path.Ext(name))
	for _, t := range types {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" {
			continue
		}
		if !strings.HasPrefix(t, ".") {
			t = "." + t
		}
		if ext == t {
			return true
		}
	}
	return false
}

func list(a Args) *sdk.Result {
	var ents []files.Entry
	var base string
	truncated := false
	if a.Recursive {
		w, err := files.Walk(a.Path, &files.WalkOptions{MaxEntries: walkCap})
		if err != nil {
			return fileErr(a, err)
		}
		ents, base, truncated = w.Entries, w.Path, w.Truncated
	} else {
		l, err := files.List(a.Path, nil)
		if err != nil {
			return fileErr(a, err)
		}
		ents, base, truncated = l.Entries, l.Path, l.Truncated
	}
	out := []map[string]any{}
	dirs, nfiles := 0, 0
	for _, e := range ents {
		if !a.ShowHidden && hiddenBelow(relOf(base, e.Path)) {
			continue
		}
		info := entryInfo(e)
		isDir := info["is_directory"].(bool)
		if !isDir && !wantType(a.FileTypes, e.Name) {
			continue
		}
		if len(out) == listCap {
			truncated = true
			break
		}
		out = append(out, info)
		if isDir {
			dirs++
		} else {
			nfiles++
		}
	}
	return ok(a, map[string]any{
		"files": out, "total_count": len(out), "directory_count": dirs, "file_count": nfiles, "truncated": truncated,
	})
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

func grep(a Args) *sdk.Result {
	pat := patternOf(a)
	if pat == "" {
		return fail(a, "Pattern is required for grep operation")
	}
	re, err := compileRegex(pat, a.FixedStrings, a.CaseInsensitive)
	if err != nil {
		return fail(a, "Invalid regex pattern: "+err.Error())
	}
	limit := grepDefault
	if a.MaxResults != nil {
		limit = clamp(*a.MaxResults, 1, grepMax)
	}
	before, after := clamp(a.ContextBefore, 0, contextMax), clamp(a.ContextAfter, 0, contextMax)

	st, err := files.Stat(a.Path)
	if err != nil {
		return fileErr(a, err)
	}
	type cand struct {
		path string
		size int64
	}
	var cands []cand
	truncated := false
	if !st.IsDirectory {
		cands = append(cands, cand{st.Path, st.Size})
	} else {
		w, err := files.Walk(a.Path, &files.WalkOptions{MaxEntries: walkCap})
		if err != nil {
			return fileErr(a, err)
		}
		truncated = w.Truncated
		for _, e := range w.Entries {
			if e.IsDirectory || e.IsSymlink {
				continue
			}
			rel := relOf(w.Path, e.Path)
			if !a.ShowHidden && hiddenBelow(rel) {
				continue
			}
			if excluded(a.Exclude, rel) {
				continue
			}
			if len(a.Include) > 0 && !anyMatch(a.Include, e.Name, rel) {
				continue
			}
			cands = append(cands, cand{e.Path, e.Size})
		}
	}

	matches := []map[string]any{}
	searched, matched := 0, 0
	for _, c := range cands {
		if len(matches) >= limit {
			truncated = true
			break
		}
		if c.size > grepMaxFileSize {
			continue
		}
		b, err := files.Read(c.path, &files.ReadOptions{MaxBytes: grepMaxFileSize})
		if err != nil {
			continue // vanished, unreadable or grown past the limit
		}
		if bytes.IndexByte(b[:min(len(b), binarySniff)], 0) >= 0 {
			continue
		}
		searched++
		lines := splitLines(string(b))
		hit := false
		for i, l := range lines {
			if !re.MatchString(l) {
				continue
			}
			if len(matches) >= limit {
				truncated = true
				break
			}
			hit = true
			m := map[string]any{"file": c.path, "line_number": i + 1, "line_content": l}
			if before > 0 {
				m["context_before"] = append([]string{}, lines[max(0, i-before):i]...)
			}
			if after > 0 {
				m["context_after"] = append([]string{}, lines[i+1:min(len(lines), i+1+after)]...)
			}
			matches = append(matches, m)
		}
		if hit {
			matched++
		}
	}
	return ok(a, map[string]any{
		"matches": matches, "match_count": len(matches), "files_searched": searched,
		"files_matched": matched, "truncated": truncated,
	})
}

func glob(a Args) *sdk.Result {
	pat := patternOf(a)
	if pat == "" {
		return fail(a, "Pattern is required for glob operation")
	}
	if strings.HasPrefix(pat, "/") {
		base := strings.TrimSuffix(path.Clean(a.Path), "/") + "/"
		if !strings.HasPrefix(pat, base) {
			return fail(a, "Invalid glob pattern: an absolute pattern must lie below path")
		}
		pat = strings.TrimPrefix(pat, base)
	}
	g, err := compileGlob(pat)
	if err != nil {
		return fail(a, "Invalid glob pattern: "+patternOf(a))
	}
	limit := globDefault
	if a.MaxResults != nil {
		limit = clamp(*a.MaxResults, 1, globMax)
	}
	filesOnly := a.FilesOnly == nil || *a.FilesOnly
	meta := a.IncludeMetadata == nil || *a.IncludeMetadata

	// Walk from the pattern's literal directory prefix, as deep as it can
	// match.
	start := path.Clean(a.Path)
	prefix := g.literalPrefix()
	if len(prefix) > 0 {
		start = path.Join(append([]string{start}, prefix...)...)
	}
	depth := g.maxDepth()
	if depth > 0 {
		depth -= len(prefix)
	}
	type hit struct {
		e   files.Entry
		dir bool
	}
	var hits []hit
	truncated := false
	w, err := files.Walk(start, &files.WalkOptions{MaxDepth: depth, MaxEntries: walkCap})
	if err != nil {
		var fe *files.Error
		if len(prefix) > 0 && errors.As(err, &fe) && fe.ErrorType == "not_found" {
			w = &files.WalkResult{} // the literal prefix does not exist: no match
		} else {
			return fileErr(a, err)
		}
	}
	truncated = w.Truncated
	base := path.Clean(a.Path)
	for _, e := range w.Entries {
		rel := relOf(base, e.Path)
		if !g.match(rel, a.ShowHidden) || excluded(a.Exclude, rel) {
			continue
		}
		dir := e.IsDirectory
		if e.IsSymlink {
			if st, err := files.Stat(e.Path); err == nil {
				dir = st.IsDirectory
				e.Size, e.ModifiedTime = st.Size, st.ModifiedTime
			}
		}
		if dir && filesOnly {
			continue
		}
		hits = append(hits, hit{e, dir})
	}
	sort.Slice(hits, func(i, j int) bool { return hits[i].e.Path < hits[j].e.Path })
	if len(hits) > limit {
		hits, truncated = hits[:limit], true
	}
	out := make([]map[string]any, 0, len(hits))
	for _, h := range hits {
		m := map[string]any{"path": h.e.Path, "name": h.e.Name, "is_directory": h.dir, "size": nil, "modified_time": nil}
		if meta {
			m["size"], m["modified_time"] = h.e.Size, isoTime(h.e.ModifiedTime)
		}
		out = append(out, m)
	}
	return ok(a, map[string]any{"files": out, "total_count": len(out), "truncated": truncated})
}
