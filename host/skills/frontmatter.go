package skills

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// errNoFrontmatter is returned for a SKILL.md that does not begin with a
// --- delimited block.
var errNoFrontmatter = errors.New("no --- delimited frontmatter at the top of SKILL.md")

// maxFrontmatter bounds the frontmatter block parsed.
const maxFrontmatter = 64 << 10

// Frontmatter parses the YAML frontmatter at the top of a SKILL.md: the
// block between a first line "---" and the next line "---", decoded by the
// YAML library (go.yaml.in/yaml/v3). It takes what skills use: a mapping
// whose values are scalars (plain, quoted, folded > or literal |) and
// nested mappings (metadata). Plain scalars YAML types keep their type:
// booleans, null, integers (int64, within ±2^53, else the text) and finite
// floats (float64, else the text). Anything else (lists, flow
// collections, anchors, aliases, explicit tags, duplicate keys) is an
// error: a skill using them is not served rather than served with a
// frontmatter that JSON would carry differently.
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
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(strings.Join(block, "\n")), &doc); err != nil {
		return nil, errors.New("frontmatter: " + err.Error())
	}
	if doc.Kind == 0 { // an empty block
		return map[string]any{}, nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("frontmatter is not a mapping of keys to values")
	}
	return mapping(doc.Content[0])
}

// errAt is msg about the frontmatter line of n.
func errAt(n *yaml.Node, msg string) error {
	return errors.New("frontmatter line " + strconv.Itoa(n.Line) + ": " + msg)
}

// mapping decodes a block mapping of scalar keys.
func mapping(n *yaml.Node) (map[string]any, error) {
	if err := plain(n); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			return nil, errAt(k, "unsupported key")
		}
		if err := plain(k); err != nil {
			return nil, err
		}
		if _, dup := out[k.Value]; dup {
			return nil, errAt(k, "duplicate key "+strconv.Quote(k.Value))
		}
		val, err := value(v)
		if err != nil {
			return nil, err
		}
		out[k.Value] = val
	}
	return out, nil
}

// plain refuses what the frontmatter does not read on any node: anchors,
// explicit tags and flow collections.
func plain(n *yaml.Node) error {
	switch {
	case n.Anchor != "":
		return errAt(n, "anchors are not read")
	case n.Style&yaml.TaggedStyle != 0:
		return errAt(n, "tags are not read")
	case n.Style&yaml.FlowStyle != 0:
		return errAt(n, "flow collections are not read")
	}
	return nil
}

// value decodes a value: a scalar or a nested mapping.
func value(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		return mapping(n)
	case yaml.SequenceNode:
		return nil, errAt(n, "lists are not read")
	case yaml.AliasNode:
		return nil, errAt(n, "aliases are not read")
	case yaml.ScalarNode:
	default:
		return nil, errAt(n, "unsupported value")
	}
	if err := plain(n); err != nil {
		return nil, err
	}
	if n.Style != 0 { // quoted, literal or folded: a string
		return n.Value, nil
	}
	switch n.Tag {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, errAt(n, err.Error())
		}
		return b, nil
	case "!!int":
		var i int64
		if n.Decode(&i) == nil && i > -(1<<53) && i < 1<<53 {
			return i, nil
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, nil
		}
	}
	return n.Value, nil
}
