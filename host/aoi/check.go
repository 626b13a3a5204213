package aoi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Line is one decoded event of a stream.
type Line = map[string]any

// Check reads a whole Machine Mode stream (what a command wrote on stdout)
// and returns its events, or the first way it breaks the standard: a line
// that is not one UTF-8 JSON object with a string type; no meta event
// first, or one that names another command or no aoi_version; a type not
// in types (when types is not nil; compared without the "aoi:" prefix,
// progress and heartbeats always allowed); no summary, a summary that is
// not last or whose ok is not a boolean; an error event whose scope,
// category, code or message is not a string or whose retryable is not a
// boolean. validate, when not nil, is applied to every event.
func Check(stream []byte, command string, types []string, validate func(Line) error) ([]Line, error) {
	allowed := map[string]bool{"progress": true, "heartbeat": true}
	for _, t := range types {
		allowed[bare(t)] = true
	}
	var out []Line
	summary := false
	lines := bytes.Split(stream, []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	} else if n > 0 {
		return out, fmt.Errorf("the stream does not end with a newline")
	}
	for i, l := range lines {
		at := fmt.Sprintf("line %d", i+1)
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if !utf8.Valid(l) {
			return out, fmt.Errorf("%s: not UTF-8", at)
		}
		if summary {
			return out, fmt.Errorf("%s: output after the summary", at)
		}
		var ev Line
		d := json.NewDecoder(bytes.NewReader(l))
		if err := d.Decode(&ev); err != nil || ev == nil {
			return out, fmt.Errorf("%s: not a JSON object: %.80q", at, l)
		}
		if d.More() {
			return out, fmt.Errorf("%s: more than one JSON value", at)
		}
		typ, ok := ev["type"].(string)
		if !ok {
			return out, fmt.Errorf("%s: no string type", at)
		}
		t := bare(typ)
		if len(out) == 0 {
			if t != "meta" {
				return out, fmt.Errorf("%s: the first event is %s, not the meta event", at, typ)
			}
			if v, ok := ev["aoi_version"].(string); !ok || v == "" {
				return out, fmt.Errorf("%s: the meta event has no aoi_version", at)
			}
			if c, ok := ev["command"]; ok && c != command {
				return out, fmt.Errorf("%s: the meta event names command %v, not %q", at, c, command)
			}
		} else if t == "meta" {
			return out, fmt.Errorf("%s: a second meta event", at)
		}
		if types != nil && !allowed[t] {
			return out, fmt.Errorf("%s: type %s is not one the command declares", at, typ)
		}
		switch t {
		case "summary":
			if _, ok := ev["ok"].(bool); !ok {
				return out, fmt.Errorf("%s: the summary's ok is not a boolean", at)
			}
			summary = true
		case "error":
			for _, k := range []string{"scope", "category", "code", "message"} {
				if _, ok := ev[k].(string); !ok {
					return out, fmt.Errorf("%s: the error's %s is not a string", at, k)
				}
			}
			if _, ok := ev["retryable"].(bool); !ok {
				return out, fmt.Errorf("%s: the error's retryable is not a boolean", at)
			}
		}
		if validate != nil {
			if err := validate(ev); err != nil {
				return out, fmt.Errorf("%s (%s): %v", at, typ, err)
			}
		}
		out = append(out, ev)
	}
	if !summary {
		return out, fmt.Errorf("the stream ended without a summary")
	}
	return out, nil
}

func bare(t string) string { return strings.TrimPrefix(t, "aoi:") }
