package skills

import (
	"errors"
	"strconv"
	"strings"
)

// errNoFrontmatter is returned for a SKILL.md that does not begin with a
// --- delimited block.
var errNoFrontmatter = errors.New("no --- delimited frontmatter at the top of SKILL.md")

// maxFrontmatter bounds the frontmatter block parsed.
const maxFrontmatter = 64 << 10

// Frontmatter parses the YAML frontmatter at the top of a SKILL.md: the
// block between a first line "---" and the next line "---". It reads the
// subset of YAML skills use: "key: value" lines whose values are plain,
// single- or double-quoted scalars or folded (>) and literal (|) block
// scalars, and one level of nested "key:" maps (metadata). Plain scalars
// that YAML types (true, false, null, integers, decimals) keep that type.
// Anything else (lists, flow collections, anchors) is an error: a skill
// using them is not served rather than served with a frontmatter a YAML
// reader would see differently.
func Frontmatter(src []byte) (map[string]any, error) {
	s := string(src)
	s = strings.TrimPrefix(s, "\ufeff")
	first, rest, ok := strings.Cut(s, "\n")
	if !ok || strings.TrimRight(first, "\r") != "---" {
		return nil, errNoFrontmatter
	}
	var block []string
	closed := false
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		line = strings.TrimRight(line, "\r")
		if strings.TrimRight(line, " \t") == "---" {
			closed = true
			break
		}
		block = append(block, line)
		if len(block) > maxFrontmatter/8 {
			return nil, errors.New("frontmatter too long")
		}
	}
	if !closed {
		return nil, errors.New("frontmatter is not closed by a --- line")
	}
	p := &fmParser{lines: block}
	out, err := p.mapping(0)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.lines) {
		return nil, errors.New("frontmatter line " + strconv.Itoa(p.i+1) + ": unexpected indentation")
	}
	return out, nil
}

type fmParser struct {
	lines []string
	i     int
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

func blank(l string) bool {
	t := strings.TrimSpace(l)
	return t == "" || strings.HasPrefix(t, "#")
}

// mapping reads "key: value" lines at exactly indent.
func (p *fmParser) mapping(indent int) (map[string]any, error) {
	out := map[string]any{}
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if blank(l) {
			p.i++
			continue
		}
		if strings.Contains(l[:indentOf(l)], "\t") || strings.HasPrefix(strings.TrimLeft(l, " "), "\t") {
			return nil, p.errf("tab indentation")
		}
		ind := indentOf(l)
		if ind < indent {
			return out, nil
		}
		if ind > indent {
			return nil, p.errf("unexpected indentation")
		}
		key, val, ok := strings.Cut(l[ind:], ":")
		if !ok || (val != "" && val[0] != ' ' && val[0] != '\t') {
			return nil, p.errf("not a key: value line")
		}
		key = strings.TrimSpace(key)
		if k, err := unquoteKey(key); err != nil {
			return nil, p.errf(err.Error())
		} else {
			key = k
		}
		if _, dup := out[key]; dup {
			return nil, p.errf("duplicate key " + strconv.Quote(key))
		}
		val = strings.TrimSpace(val)
		p.i++
		switch {
		case val == "" || strings.HasPrefix(val, "#"):
			// a nested map, or an empty (null) value
			if p.i < len(p.lines) && p.nextIndent() > indent {
				m, err := p.mapping(p.nextIndent())
				if err != nil {
					return nil, err
				}
				out[key] = m
			} else {
				out[key] = nil
			}
		case val[0] == '>' || val[0] == '|':
			v, err := p.block(val, indent)
			if err != nil {
				return nil, err
			}
			out[key] = v
		default:
			v, err := scalar(val)
			if err != nil {
				return nil, p.errf(err.Error())
			}
			out[key] = v
		}
	}
	return out, nil
}

// nextIndent is the indentation of the next non-blank line (-1: none).
func (p *fmParser) nextIndent() int {
	for j := p.i; j < len(p.lines); j++ {
		if !blank(p.lines[j]) {
			return indentOf(p.lines[j])
		}
	}
	return -1
}

func (p *fmParser) errf(msg string) error {
	return errors.New("frontmatter line " + strconv.Itoa(p.i+1) + ": " + msg)
}

// block reads a folded (>) or literal (|) block scalar whose lines are
// indented more than parent; header is the indicator with its optional
// chomping (- or +).
func (p *fmParser) block(header string, parent int) (string, error) {
	chomp := ""
	switch strings.TrimSpace(header[1:]) {
	case "":
	case "-":
		chomp = "-"
	case "+":
		chomp = "+"
	default:
		return "", p.errf("unsupported block scalar header " + strconv.Quote(header))
	}
	var lines []string
	ind := -1
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if strings.TrimSpace(l) == "" {
			lines = append(lines, "")
			p.i++
			continue
		}
		li := indentOf(l)
		if li <= parent {
			break
		}
		if ind < 0 {
			ind = li
		}
		if li < ind {
			return "", p.errf("block scalar line less indented than its first")
		}
		lines = append(lines, l[ind:])
		p.i++
	}
	// trailing blank lines belong to chomping
	trail := 0
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
		trail++
	}
	var b strings.Builder
	if header[0] == '|' {
		b.WriteString(strings.Join(lines, "\n"))
	} else {
		// folding: a line break between two text lines becomes a space;
		// each empty line is a newline
		for i, l := range lines {
			if l == "" {
				b.WriteByte('\n')
				continue
			}
			if i > 0 && lines[i-1] != "" {
				b.WriteByte(' ')
			}
			b.WriteString(l)
		}
	}
	out := b.String()
	if len(lines) == 0 {
		return "", nil
	}
	switch chomp {
	case "":
		out += "\n"
	case "+":
		out += strings.Repeat("\n", trail+1)
	}
	return out, nil
}

func unquoteKey(k string) (string, error) {
	if k == "" {
		return "", errors.New("empty key")
	}
	if k[0] == '"' || k[0] == '\'' {
		v, err := scalar(k)
		if err != nil {
			return "", err
		}
		s, ok := v.(string)
		if !ok {
			return "", errors.New("bad key")
		}
		return s, nil
	}
	if strings.ContainsAny(k[:1], "[]{}&*!|>%@`-?,") {
		return "", errors.New("unsupported key " + strconv.Quote(k))
	}
	return k, nil
}

// scalar decodes a one-line value.
func scalar(v string) (any, error) {
	switch v[0] {
	case '\'':
		end := strings.LastIndexByte(v, '\'')
		if end == 0 || strings.TrimSpace(stripComment(v[end+1:])) != "" {
			return nil, errors.New("unterminated single-quoted value")
		}
		inner := v[1:end]
		if strings.Contains(strings.ReplaceAll(inner, "''", ""), "'") {
			return nil, errors.New("bad single-quoted value")
		}
		return strings.ReplaceAll(inner, "''", "'"), nil
	case '"':
		end := closingQuote(v)
		if end < 0 || strings.TrimSpace(stripComment(v[end+1:])) != "" {
			return nil, errors.New("unterminated double-quoted value")
		}
		s, err := strconv.Unquote(v[:end+1])
		if err != nil {
			return nil, errors.New("unsupported escape in a double-quoted value")
		}
		return s, nil
	case '[', '{', '&', '*', '!', '%', '@', '`':
		return nil, errors.New("unsupported value " + strconv.Quote(v) + " (lists, maps, anchors and tags are not read)")
	}
	if v[0] == '-' && (len(v) == 1 || v[1] == ' ') {
		return nil, errors.New("lists are not read")
	}
	v = strings.TrimSpace(stripComment(v))
	switch v {
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	case "null", "Null", "NULL", "~":
		return nil, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && !strings.HasPrefix(v, "+") && (len(v) == 1 || v[0] != '0') && (v[0] != '-' || len(v) < 2 || v[1] != '0') {
		if n > -(1<<53) && n < 1<<53 {
			return n, nil
		}
	}
	if isDecimal(v) {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f, nil
		}
	}
	if strings.Contains(v, ": ") {
		return nil, errors.New("a plain value may not contain ': '")
	}
	return v, nil
}

// isDecimal reports YAML 1.2 core floats of the plain [-]digits.digits
// form (exponents and special values are kept as strings: they are not
// what skills write).
func isDecimal(v string) bool {
	v = strings.TrimPrefix(v, "-")
	a, b, ok := strings.Cut(v, ".")
	if !ok || a == "" && b == "" {
		return false
	}
	for _, c := range a + b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// stripComment cuts a " #" comment off a plain value.
func stripComment(v string) string {
	if i := strings.Index(v, " #"); i >= 0 {
		return v[:i]
	}
	return v
}

// closingQuote is the index of the quote closing a double-quoted value.
func closingQuote(v string) int {
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}
