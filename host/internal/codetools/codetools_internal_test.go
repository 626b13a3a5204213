package codetools

import (
	"strings"
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
)

func TestReadOnlyClosed(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name string
		a    *abi.ToolAnnotations
		ok   bool
		why  string
	}{
		{"no annotations", nil, false, "may change something"},
		{"no hints", &abi.ToolAnnotations{Title: "x"}, false, "may change something"},
		{"read-only, open world by default", &abi.ToolAnnotations{ReadOnlyHint: &yes}, false, "reaches outside"},
		{"read-only, open world", &abi.ToolAnnotations{ReadOnlyHint: &yes, OpenWorldHint: &yes}, false, "reaches outside"},
		{"read-only, closed world", &abi.ToolAnnotations{ReadOnlyHint: &yes, OpenWorldHint: &no}, true, ""},
		{"writes, closed world", &abi.ToolAnnotations{ReadOnlyHint: &no, OpenWorldHint: &no}, false, "may change something"},
	} {
		if ok, why := readOnlyClosed(tc.a); ok != tc.ok || why != tc.why {
			t.Errorf("%s: %v %q, want %v %q", tc.name, ok, why, tc.ok, tc.why)
		}
	}
}

// TestResultText: what a program is given of a tool's result, whatever
// the tool answered.
func TestResultText(t *testing.T) {
	for _, tc := range []struct {
		res, text string
		isError   bool
	}{
		{`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"isError":false}`, "a\nb", false},
		{`{"content":[{"type":"text","text":"bad"}],"isError":true}`, "bad", true},
		{`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"t"}]}`, "[image content left out]\nt", false},
		{`{"content":[],"structuredContent":{"n":1}}`, `{"n":1}`, false},
		{`{"content":[]}`, "", false},
		{`not json`, "the tool's result could not be read: ", true},
		{`{"content":"x"}`, "the tool's result could not be read: ", true},
	} {
		text, isError := resultText([]byte(tc.res))
		if tc.isError && strings.HasPrefix(tc.text, "the tool's result could not be read") {
			text = text[:min(len(text), len(tc.text))]
		}
		if text != tc.text || isError != tc.isError {
			t.Errorf("%s: %q %v, want %q %v", tc.res, text, isError, tc.text, tc.isError)
		}
	}
}
