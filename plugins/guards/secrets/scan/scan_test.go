package scan_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/plugins/guards/secrets/scan"
)

// TestCorpus: every credential of the committed corpus is found, as its
// kind, and redacted whole.
func TestCorpus(t *testing.T) {
	f, err := os.Open("testdata/corpus.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kind, text, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("corpus line %q: no tab", line)
		}
		seen[kind] = true
		t.Run(kind, func(t *testing.T) {
			got, kinds := scan.Redact(text)
			if len(kinds) != 1 || kinds[0] != kind || !strings.Contains(got, "[redacted:"+kind+"]") {
				t.Fatalf("Redact(%q) = %q %v, want one %s", text, got, kinds, kind)
			}
			// nothing of the credential is left: no run of 16 of its
			// characters stands in the redacted text
			for _, fd := range scan.Text(text) {
				cred := text[fd.Start:fd.End]
				for i := 0; i+16 <= len(cred); i++ {
					if strings.Contains(got, cred[i:i+16]) {
						t.Fatalf("%q left in %q", cred[i:i+16], got)
					}
				}
			}
		})
	}
	keys, _ := filepath.Glob("testdata/keys/*.pem")
	for _, k := range keys {
		b, err := os.ReadFile(k)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(k), func(t *testing.T) {
			text := "the key:\n" + string(b) + "end"
			got, kinds := scan.Redact(text)
			if got != "the key:\n[redacted:private_key]\nend" || len(kinds) != 1 {
				t.Fatalf("Redact = %q %v", got, kinds)
			}
		})
		seen["private_key"] = true
	}
	for _, k := range scan.Kinds() {
		if !seen[k] {
			t.Errorf("kind %s has no corpus entry", k)
		}
	}
}

// TestNoFalsePositives: the seed transcripts (the user's documents, with
// their commands, hashes, ids and paths) hold no credential.
func TestNoFalsePositives(t *testing.T) {
	files, _ := filepath.Glob("testdata/seeds/*.txt")
	if len(files) == 0 {
		t.Fatal("no seed transcripts in testdata/seeds")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range scan.Text(string(b)) {
			t.Errorf("%s: %s at %d: %q", f, fd.Kind, fd.Start, b[fd.Start:fd.End])
		}
	}
	// and lookalikes that are not credentials
	for _, s := range []string{
		"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"commit 26933b1c0ffee26933b1c0ffee26933b1c0ffee2",
		"session 9c32eec224d6ee13 for agent d85ed254",
		"AKIA is a prefix; AKIAshort is not a key",
		"ghp_tooShort", "sk-not-a-key", "xoxb-", "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----",
		"eyJhbGciOi.notajwt", "AccountKey=short",
	} {
		if fs := scan.Text(s); len(fs) != 0 {
			t.Errorf("%q: found %v", s, fs)
		}
	}
}

func TestJSON(t *testing.T) {
	key := "ghp_" + strings.Repeat("a1B2", 9)
	for _, tc := range []struct {
		name, doc, want string
		kinds           int
		bad             bool
	}{
		{"nothing found", `{"content":[{"type":"text","text":"fine"}],"n":1.50}`, "", 0, false},
		{"in a nested string", `{"content":[{"type":"text","text":"token ` + key + ` here"}],"n":1.50}`,
			`{"content":[{"text":"token [redacted:github_token] here","type":"text"}],"n":1.50}`, 1, false},
		{"in a key", `{"` + key + `":1}`, `{"[redacted:github_token]":1}`, 1, false},
		{"escaped newlines of a PEM in JSON", `{"k":"-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----"}`, `{"k":"[redacted:private_key]"}`, 1, false},
		{"not JSON", `{"a":`, "", 0, true},
		{"trailing data", `{} {}`, "", 0, true},
		{"too deep", strings.Repeat("[", scan.MaxDepth+2) + `"` + key + `"` + strings.Repeat("]", scan.MaxDepth+2), "", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, kinds, err := scan.JSON([]byte(tc.doc))
			if tc.bad != (err != nil) || string(out) != tc.want || len(kinds) != tc.kinds {
				t.Fatalf("JSON = %s %v %v, want %s (%d kinds, error %v)", out, kinds, err, tc.want, tc.kinds, tc.bad)
			}
		})
	}
}

// FuzzJSON: whatever a tool returns, the scanner answers without
// panicking, and what it redacts stays valid JSON with no finding left.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"AKIAIOSFODNN7EXAMPLE"}`, `["x",1,null]`, `"-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		out, kinds, err := scan.JSON(doc)
		if err != nil || out == nil {
			return
		}
		if len(kinds) == 0 || !json.Valid(out) {
			t.Fatalf("JSON(%q) = %q, %v", doc, out, kinds)
		}
		if again, _, _ := scan.JSON(out); again != nil {
			t.Fatalf("JSON(%q) = %q still holds a credential: %q", doc, out, again)
		}
	})
}
