package main

import (
	"path"
	"strings"
)

// globPattern is a compiled glob: path segments separated by "/", each a
// path.Match pattern (*, ?, [...], \-escapes), "**" standing for zero or
// more whole segments.
type globPattern struct {
	segs []string
}

// compileGlob splits and validates a pattern. An empty pattern, or one
// with a malformed segment, is an error (path.ErrBadPattern).
func compileGlob(p string) (*globPattern, error) {
	p = strings.Trim(p, "/")
	var segs []string
	for _, s := range strings.Split(p, "/") {
		if s == "" || s == "." {
			continue
		}
		if s != "**" {
			if _, err := path.Match(s, ""); err != nil {
				return nil, err
			}
		}
		// Collapse runs of "**".
		if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
			continue
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return nil, path.ErrBadPattern
	}
	return &globPattern{segs: segs}, nil
}

// hasSlash reports whether the pattern has more than one segment or a
// "**": then it matches relative paths, not just names.
func (g *globPattern) hasSlash() bool {
	return len(g.segs) > 1 || g.segs[0] == "**"
}

// maxDepth is the deepest a match can be (0: unbounded, with "**").
func (g *globPattern) maxDepth() int {
	for _, s := range g.segs {
		if s == "**" {
			return 0
		}
	}
	return len(g.segs)
}

// literalPrefix returns the leading segments without glob syntax, which
// name a directory the walk can start from.
func (g *globPattern) literalPrefix() []string {
	var out []string
	for _, s := range g.segs[:len(g.segs)-1] {
		if s == "**" || strings.ContainsAny(s, `*?[\`) {
			break
		}
		out = append(out, s)
	}
	return out
}

// hidden reports whether a name is hidden (starts with a dot).
func hidden(name string) bool { return strings.HasPrefix(name, ".") }

// match reports whether rel (a relative, slash-separated path) matches.
// As in a shell, a hidden name (".x") is matched only by a segment that
// itself starts with a dot, unless showHidden; "**" never descends
// through hidden directories unless showHidden.
func (g *globPattern) match(rel string, showHidden bool) bool {
	return matchSegs(g.segs, strings.Split(rel, "/"), showHidden)
}

func matchSegs(pat, name []string, showHidden bool) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			// ** matches zero or more segments.
			for i := 0; i <= len(name); i++ {
				if matchSegs(rest, name[i:], showHidden) {
					return true
				}
				if i < len(name) && hidden(name[i]) && !showHidden {
					return false
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if hidden(name[0]) && !showHidden && !strings.HasPrefix(pat[0], ".") {
			return false
		}
		ok, _ := path.Match(pat[0], name[0])
		if !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// matchName matches a single name against a one-segment pattern with the
// hidden rule.
func matchName(pattern, name string, showHidden bool) bool {
	if hidden(name) && !showHidden && !strings.HasPrefix(pattern, ".") {
		return false
	}
	ok, _ := path.Match(pattern, name)
	return ok
}

// anyMatch reports whether any of the filter globs matches the name or
// the relative path (a glob with a "/" is matched against the relative
// path, any other against the name alone). Filters ignore the hidden rule.
func anyMatch(globs []string, name, rel string) bool {
	for _, g := range globs {
		g = strings.TrimPrefix(g, "./")
		if g == "" {
			continue
		}
		if strings.Contains(strings.TrimSuffix(g, "/"), "/") || strings.HasPrefix(g, "**") {
			if gp, err := compileGlob(g); err == nil && gp.match(rel, true) {
				return true
			}
			continue
		}
		if ok, _ := path.Match(strings.TrimSuffix(g, "/"), name); ok {
			return true
		}
	}
	return false
}
