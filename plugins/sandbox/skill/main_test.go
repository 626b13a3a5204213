package main

import "testing"

func TestFrontMatter(t *testing.T) {
	text := "---\nname: report-writer\ndescription: \"Create structured reports: fast.\"\nlicense: MIT\nmetadata:\n  a: b\n---\n\n# Report Writer\n\nUse it.\n"
	s := parse("/skills/rw", text)
	if s.name != "report-writer" || s.description != "Create structured reports: fast." {
		t.Errorf("fields: %+v", s)
	}
	if s.body != "# Report Writer\n\nUse it.\n" {
		t.Errorf("body: %q", s.body)
	}
	s = parse("/skills/folded", "---\ndescription: >\n  one\n  two\n---\nbody")
	if s.name != "folded" || s.description != "one two" || s.body != "body" {
		t.Errorf("folded: %+v", s)
	}
	s = parse("/skills/plain", "# No front matter\n")
	if s.name != "plain" || s.description != "" || s.body != "# No front matter\n" {
		t.Errorf("plain: %+v", s)
	}
	s = parse("/skills/x", "---\nname: 'it''s'\ndescription: a\n  continued\n---\n")
	if s.name != "it's" || s.description != "a continued" || s.body != "" {
		t.Errorf("quoted: %+v", s)
	}
}
