// Package rules is the argument-policy guard's matcher (spec/hooks.md §3):
// deny rules from the guard's config, each a JSON path into a call's
// arguments and a regular expression its values must not match. Pure Go,
// tested natively.
package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Prefix marks a deny rule among the config's keys: "deny:<path>" with
// the pattern as its value. Other keys are ignored.
const Prefix = "deny:"

// Rule is one deny rule: values at Path (dotted members and array
// indices; "*" for any member or element) matching Pattern deny the call.
type Rule struct {
	Path    []string
	Pattern *regexp.Regexp
	raw     string
}

// String is the rule as the config writes it.
func (r Rule) String() string { return Prefix + strings.Join(r.Path, ".") + " " + r.raw }

// Bounds on the config.
const (
	MaxRules   = 64
	MaxPattern = 1024
	MaxDepth   = 64
)

// Parse reads the deny rules of a guard's config, in key order. A bad
// path or pattern is an error naming the key.
func Parse(config map[string]string) ([]Rule, error) {
	var keys []string
	for k := range config {
		if strings.HasPrefix(k, Prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) > MaxRules {
		return nil, fmt.Errorf("%d deny rules, at most %d", len(keys), MaxRules)
	}
	out := make([]Rule, 0, len(keys))
	for _, k := range keys {
		path := strings.TrimPrefix(k, Prefix)
		if path == "" || strings.Contains(path, "..") || strings.HasPrefix(path, ".") || strings.HasSuffix(path, ".") {
			return nil, fmt.Errorf("%s: the path must be dotted members (a.b.0.c, * for any)", k)
		}
		segs := strings.Split(path, ".")
		if len(segs) > MaxDepth {
			return nil, fmt.Errorf("%s: deeper than %d", k, MaxDepth)
		}
		p := config[k]
		if len(p) > MaxPattern {
			return nil, fmt.Errorf("%s: pattern longer than %d", k, MaxPattern)
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
		out = append(out, Rule{Path: segs, Pattern: re, raw: p})
	}
	return out, nil
}

// Match returns the first rule a value of args (a JSON object) matches,
// with the value's path; ok false when none does. Strings are matched as
// they are, numbers and booleans as their JSON text; objects, arrays and
// null are not values.
func Match(rules []Rule, args []byte) (r Rule, at string, ok bool, err error) {
	if len(rules) == 0 {
		return Rule{}, "", false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Rule{}, "", false, err
	}
	for _, r := range rules {
		if at, ok := find(v, r.Path, nil, r.Pattern); ok {
			return r, at, true, nil
		}
	}
	return Rule{}, "", false, nil
}

func find(v any, path []string, trail []string, re *regexp.Regexp) (string, bool) {
	if len(path) == 0 {
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case json.Number:
			s = x.String()
		case bool:
			s = strconv.FormatBool(x)
		default:
			return "", false
		}
		if re.MatchString(s) {
			return strings.Join(trail, "."), true
		}
		return "", false
	}
	seg, rest := path[0], path[1:]
	switch x := v.(type) {
	case map[string]any:
		if seg == "*" {
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if at, ok := find(x[k], rest, append(trail, k), re); ok {
					return at, true
				}
			}
			return "", false
		}
		e, ok := x[seg]
		if !ok {
			return "", false
		}
		return find(e, rest, append(trail, seg), re)
	case []any:
		if seg == "*" {
			for i, e := range x {
				if at, ok := find(e, rest, append(trail, strconv.Itoa(i)), re); ok {
					return at, true
				}
			}
			return "", false
		}
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(x) {
			return "", false
		}
		return find(x[i], rest, append(trail, seg), re)
	}
	return "", false
}
