package skills

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

const skillMD = "---\nname: demo\ndescription: A demo skill.\n---\n# Demo\n"

func TestStore(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "demo", "SKILL.md"), skillMD)
	write(t, filepath.Join(root, "demo", "ref", "a.md"), "alpha")
	write(t, filepath.Join(root, "misnamed", "SKILL.md"), strings.Replace(skillMD, "demo", "other", 1))
	write(t, filepath.Join(root, "nodesc", "SKILL.md"), "---\nname: nodesc\n---\n")
	outside := filepath.Join(t.TempDir(), "secret.txt")
	write(t, outside, "secret")
	if err := os.Symlink(outside, filepath.Join(root, "demo", "leak.txt")); err != nil {
		t.Fatal(err)
	}
	st := New([]string{root})
	list := st.List()
	if len(list) != 1 || list[0].Name != "demo" {
		t.Fatalf("skills: %+v (a misnamed directory and a skill without description are not served)", list)
	}
	sk := list[0]
	var paths []string
	for _, f := range sk.Files {
		paths = append(paths, f.Path)
		if !strings.HasPrefix(f.Digest, "sha256:") || len(f.Digest) != 71 {
			t.Fatalf("digest %q", f.Digest)
		}
	}
	if !reflect.DeepEqual(paths, []string{"SKILL.md", "ref/a.md"}) {
		t.Fatalf("files %v: the symlink must not be served", paths)
	}
	if sk.Files[1].Size != 5 || sk.Files[1].Digest != "sha256:8ed3f6ad685b959ead7022518e1af76cd816f8e8ec7ccdda1ed4018e8f2223f8" {
		t.Fatalf("ref/a.md: %+v", sk.Files[1])
	}
	if b, mt, err := st.Read("skill://demo/ref/a.md"); err != nil || string(b) != "alpha" || mt != "text/markdown" {
		t.Fatalf("read: %q %q %v", b, mt, err)
	}
	for _, uri := range []string{
		"skill://demo/leak.txt", "skill://demo/../demo/SKILL.md", "skill://demo/ref/../../misnamed/SKILL.md",
		"skill://demo//etc/passwd", "skill://demo/ref", "skill://nope/SKILL.md", "file:///etc/passwd", "skill://demo/",
	} {
		if _, _, err := st.Read(uri); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Read(%q) = %v, want ErrNotFound", uri, err)
		}
	}
	ents, err := st.ReadDir("skill://demo")
	if err != nil || len(ents) != 2 || ents[1].MIMEType != DirMIME || ents[1].URI != "skill://demo/ref" {
		t.Fatalf("ReadDir: %+v %v", ents, err)
	}
	if ents, err := st.ReadDir("skill://demo/ref"); err != nil || len(ents) != 1 || ents[0].URI != "skill://demo/ref/a.md" {
		t.Fatalf("ReadDir ref: %+v %v", ents, err)
	}
	if _, err := st.ReadDir("skill://demo/SKILL.md"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadDir of a file: %v", err)
	}

	// Changes are seen without a new Store.
	time.Sleep(scanEvery + 50*time.Millisecond)
	write(t, filepath.Join(root, "demo", "ref", "a.md"), "alpha, edited")
	write(t, filepath.Join(root, "fresh", "SKILL.md"), strings.ReplaceAll(skillMD, "demo", "fresh"))
	list = st.List()
	if len(list) != 2 || list[1].Name != "fresh" {
		t.Fatalf("after adding a skill: %+v", list)
	}
	if f := list[0].Files[1]; f.Size != 13 {
		t.Fatalf("after editing a file: %+v", f)
	}
	time.Sleep(scanEvery + 50*time.Millisecond)
	if err := os.RemoveAll(filepath.Join(root, "fresh")); err != nil {
		t.Fatal(err)
	}
	if list = st.List(); len(list) != 1 {
		t.Fatalf("after removing a skill: %+v", list)
	}
}

func TestLimits(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "big", "SKILL.md"), strings.ReplaceAll(skillMD, "demo", "big"))
	for i := 0; i < MaxFiles; i++ {
		write(t, filepath.Join(root, "big", "f", fmt.Sprintf("f%03d", i)), "")
	}
	if list := New([]string{root}).List(); len(list) != 0 {
		t.Fatalf("a skill of more than %d files is served", MaxFiles)
	}
}

func TestRootIsASkill(t *testing.T) {
	root := filepath.Join(t.TempDir(), "demo")
	write(t, filepath.Join(root, "SKILL.md"), skillMD)
	if list := FromEnv(func(string) string { return root }).List(); len(list) != 1 || list[0].Name != "demo" {
		t.Fatalf("%+v", list)
	}
	if FromEnv(func(string) string { return "" }) != nil {
		t.Fatal("no AIO_SKILLS_PATH must serve no skills")
	}
}

func TestValidName(t *testing.T) {
	for n, want := range map[string]bool{"a": true, "pdf-tools": true, "a1-b2": true, "": false, "-a": false, "a-": false,
		"a--b": false, "A": false, "a_b": false, strings.Repeat("a", 64): true, strings.Repeat("a", 65): false} {
		if ValidName(n) != want {
			t.Errorf("ValidName(%q) = %v", n, !want)
		}
	}
}

func TestFrontmatter(t *testing.T) {
	cases := []struct {
		src  string
		want map[string]any
		bad  bool
	}{
		{src: "---\nname: x\ndescription: plain text here\n---\nbody", want: map[string]any{"name": "x", "description": "plain text here"}},
		{src: "\ufeff---\r\nname: 'it''s'\r\ndescription: \"a \\\"q\\\"\"\r\n---\r\n", want: map[string]any{"name": "it's", "description": `a "q"`}},
		{src: "---\nd: >\n  one\n  two\n\n  three\nn: 1\n---\n", want: map[string]any{"d": "one two\nthree\n", "n": int64(1)}},
		{src: "---\nd: |-\n  one\n  two\nb: true\nf: 1.5\nz: ~\n---\n", want: map[string]any{"d": "one\ntwo", "b": true, "f": 1.5, "z": nil}},
		{src: "---\nmetadata:\n  author: me\n  version: \"1.0\"\nname: n # comment\n---\n", want: map[string]any{"metadata": map[string]any{"author": "me", "version": "1.0"}, "name": "n"}},
		{src: "no frontmatter", bad: true},
		{src: "---\nname: x\n", bad: true},
		{src: "---\ntags: [a, b]\n---\n", bad: true},
		{src: "---\n- a\n---\n", bad: true},
		{src: "---\nname: x\nname: y\n---\n", bad: true},
		{src: "---\nname: x\n  bad: indent\n---\n", bad: true},
		{src: "---\nk: a: b\n---\n", bad: true},
	}
	for _, c := range cases {
		got, err := Frontmatter([]byte(c.src))
		if c.bad {
			if err == nil {
				t.Errorf("%q: parsed as %v, want an error", c.src, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v %v, want %v", c.src, got, err, c.want)
		}
	}
}

func FuzzFrontmatter(f *testing.F) {
	for _, s := range []string{skillMD, "---\nd: >-\n  a\n\n  b\nm:\n  k: 'v'\n---\n", "---\n\"k\": \"\\u00e9\"\n---\n", "---\n---\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Frontmatter(b)
		if err != nil {
			return
		}
		// whatever parses is a JSON-able object of scalars and maps
		var walk func(v any, depth int)
		walk = func(v any, depth int) {
			switch x := v.(type) {
			case map[string]any:
				for _, e := range x {
					walk(e, depth+1)
				}
			case string, bool, int64, float64, nil:
			default:
				t.Fatalf("unexpected %T in %v", v, m)
			}
		}
		walk(m, 0)
	})
}
