package caps_test

import (
	"os"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
)

// TestDocExamples parses every code block marked "json manifest" or "json
// policy" in the specs, so the examples there stay valid.
func TestDocExamples(t *testing.T) {
	for _, doc := range []string{"../../spec/manifest/v1/README.md", "../../spec/policy.md", "../../spec/upstream.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			kind, ok := strings.CutPrefix(lines[i], "```json ")
			if !ok {
				continue
			}
			start := i + 1
			for i++; i < len(lines) && lines[i] != "```"; i++ {
			}
			block := []byte(strings.Join(lines[start:i], "\n"))
			n++
			switch kind {
			case "manifest":
				if _, err := caps.ParseManifest(block); err != nil {
					t.Errorf("%s:%d: %v", doc, start, err)
				}
				if err := validateSchema(t, block); err != nil {
					t.Errorf("%s:%d: schema: %v", doc, start, err)
				}
			case "policy":
				if _, err := caps.ParsePolicy(block); err != nil {
					t.Errorf("%s:%d: %v", doc, start, err)
				}
			default:
				t.Errorf("%s:%d: unknown block kind %q", doc, start, kind)
			}
		}
		if n == 0 {
			t.Errorf("%s: no examples found", doc)
		}
	}
}
