// Package scan finds credentials in text and in JSON values: API keys,
// tokens, private keys and cloud credentials in the formats their issuers
// give them. It is the secrets guard's scanner (spec/hooks.md §3), pure Go
// so that it is tested natively against the committed corpus.
package scan

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"sort"
)

// kind is one credential format: its name (what a redaction says) and its
// pattern. A pattern with a group redacts the group only (the value after
// a name, say); without one, the whole match.
type kind struct {
	name string
	re   *regexp.Regexp
}

// kinds are the formats, most specific first (the first match of a span
// names it).
var kinds = []kind{
	{"private_key", regexp.MustCompile(`-----BEGIN (?:(?:RSA|DSA|EC|OPENSSH|PGP|ENCRYPTED) )?PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END (?:(?:RSA|DSA|EC|OPENSSH|PGP|ENCRYPTED) )?PRIVATE KEY(?: BLOCK)?-----`)},
	{"aws_access_key_id", regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`)},
	{"aws_secret_access_key", regexp.MustCompile(`(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})\b`)},
	{"github_token", regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b`)},
	{"gitlab_token", regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20}\b`)},
	{"slack_token", regexp.MustCompile(`\bxox[abposr]-[0-9]{8,}-[0-9A-Za-z-]{8,}\b`)},
	{"slack_webhook", regexp.MustCompile(`https://hooks\.slack\.com/services/T[A-Z0-9]{8,}/B[A-Z0-9]{8,}/[A-Za-z0-9]{24}`)},
	{"stripe_key", regexp.MustCompile(`\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,99}\b`)},
	{"anthropic_key", regexp.MustCompile(`\bsk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{80,120}\b`)},
	{"openai_key", regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}\b`)},
	{"google_api_key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
	{"npm_token", regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`)},
	{"azure_storage_key", regexp.MustCompile(`AccountKey=([A-Za-z0-9+/]{86}==)`)},
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`)},
}

// Kinds are the names of the formats Text finds, in order.
func Kinds() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name
	}
	return out
}

// Finding is one credential found: its kind and where it is in the text
// (byte offsets).
type Finding struct {
	Kind       string
	Start, End int
}

// Text returns the credentials in s, in order, without overlaps (the
// first format to claim a span keeps it).
func Text(s string) []Finding {
	var out []Finding
	for _, k := range kinds {
		for _, m := range k.re.FindAllStringSubmatchIndex(s, -1) {
			st, en := m[0], m[1]
			if len(m) >= 4 && m[2] >= 0 {
				st, en = m[2], m[3]
			}
			overlaps := false
			for _, f := range out {
				if st < f.End && f.Start < en {
					overlaps = true
					break
				}
			}
			if !overlaps {
				out = append(out, Finding{Kind: k.name, Start: st, End: en})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// Redact replaces each credential of s by "[redacted:<kind>]" and returns
// the text and the kinds it found (in order, repeated as found).
func Redact(s string) (string, []string) {
	fs := Text(s)
	if len(fs) == 0 {
		return s, nil
	}
	var b []byte
	var found []string
	last := 0
	for _, f := range fs {
		b = append(b, s[last:f.Start]...)
		b = append(b, "[redacted:"+f.Kind+"]"...)
		last = f.End
		found = append(found, f.Kind)
	}
	return string(append(b, s[last:]...)), found
}

// MaxDepth bounds the nesting of a JSON value JSON walks.
const MaxDepth = 256

// ErrTooDeep is returned for a value nested deeper than MaxDepth.
var ErrTooDeep = errors.New("JSON nested too deep")

// JSON redacts the credentials in every string of the JSON value doc
// (object keys included) and returns the value re-encoded (nil when
// nothing was found: doc stands as it is) and the kinds found. Numbers
// keep their digits. An error means doc is not one JSON value.
func JSON(doc []byte) ([]byte, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, err
	}
	if dec.More() {
		return nil, nil, errors.New("trailing data after the JSON value")
	}
	var found []string
	nv, err := walk(v, &found, 0)
	if err != nil || len(found) == 0 {
		return nil, nil, err
	}
	out, err := json.Marshal(nv)
	return out, found, err
}

func walk(v any, found *[]string, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, ErrTooDeep
	}
	switch x := v.(type) {
	case string:
		r, ks := Redact(x)
		*found = append(*found, ks...)
		return r, nil
	case []any:
		for i := range x {
			nv, err := walk(x[i], found, depth+1)
			if err != nil {
				return nil, err
			}
			x[i] = nv
		}
		return x, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			nv, err := walk(e, found, depth+1)
			if err != nil {
				return nil, err
			}
			rk, ks := Redact(k)
			*found = append(*found, ks...)
			out[rk] = nv
		}
		return out, nil
	}
	return v, nil
}
