package proc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestResolveProgram(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	bin := base + "/bin"
	other := base + "/other"
	os.MkdirAll(bin, 0o755)
	os.MkdirAll(other, 0o755)
	// A multi-call binary reached under two names, a look-alike elsewhere,
	// a non-executable file, and a symlink to the real tool.
	os.WriteFile(bin+"/multi", []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("multi", bin+"/ls")
	os.Symlink("multi", bin+"/rm")
	os.WriteFile(bin+"/tool", []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(bin+"/noexec", []byte("x"), 0o644)
	os.WriteFile(other+"/tool", []byte("#!/bin/sh\n"), 0o755)
	os.Symlink(bin+"/tool", other+"/toollink")
	m := newManager(t, Config{BaseEnv: []string{"PATH=" + bin}})

	tests := []struct {
		name      string
		allowed   []string
		childPATH string
		want      string
		err       error
	}{
		{"bare name", []string{"tool"}, "", bin + "/tool", nil},
		{"absolute path of the granted name", []string{"tool"}, "", bin + "/tool", nil},
		{"absolute grant", []string{bin + "/tool"}, "", bin + "/tool", nil},
		{"look-alike elsewhere", []string{"tool"}, "", "", ErrDenied},
		{"child PATH ignored without *", []string{"tool"}, other, bin + "/tool", nil},
		{"child PATH used with *", []string{"*"}, other, other + "/tool", nil},
		{"multi-call: granted applet", []string{"ls"}, "", bin + "/ls", nil},
		{"multi-call: other applet", []string{"ls"}, "", "", ErrDenied},
		{"symlink under another name", []string{"tool"}, "", "", ErrDenied},
		{"not granted", []string{"ls"}, "", "", ErrDenied},
		{"granted, missing", []string{"missing"}, "", "", ErrNotFound},
		{"not granted, missing", []string{"ls"}, "", "", ErrDenied},
		{"not executable", []string{"*"}, "", "", ErrNotFound},
		{"relative path", []string{"*"}, "", "", ErrInvalid},
	}
	names := map[string]string{
		"bare name": "tool", "absolute path of the granted name": bin + "/tool", "absolute grant": "tool",
		"look-alike elsewhere": other + "/tool", "child PATH ignored without *": "tool", "child PATH used with *": "tool",
		"multi-call: granted applet": "ls", "multi-call: other applet": "rm", "symlink under another name": other + "/toollink",
		"not granted": "tool", "granted, missing": "missing", "not granted, missing": "missing",
		"not executable": "noexec", "relative path": "./tool",
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.ResolveProgram(names[tt.name], tt.allowed, tt.childPATH)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q %v, want %q", got, err, tt.want)
			}
		})
	}
}

func TestCheckCwd(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	root, out := base+"/root", base+"/out"
	os.MkdirAll(root+"/sub", 0o755)
	os.MkdirAll(out, 0o755)
	os.WriteFile(root+"/file", nil, 0o644)
	os.Symlink(out, root+"/escape")
	os.Symlink("../out", root+"/relescape")
	os.Symlink(root+"/sub", base+"/in")
	os.Symlink(root, base+"/rootlink")
	tests := []struct {
		dir   string
		roots []string
		want  string
		err   error
	}{
		{root, []string{root}, root, nil},
		{root + "/sub/", []string{root}, root + "/sub", nil},
		{base + "/in", []string{root}, root + "/sub", nil},                // symlink outside pointing inside
		{root + "/sub", []string{base + "/rootlink"}, root + "/sub", nil}, // root given through a symlink
		{root + "/escape", []string{root}, "", ErrDenied},
		{root + "/relescape", []string{root}, "", ErrDenied},
		{root + "/sub/../../out", []string{root}, "", ErrDenied},
		{out, []string{root}, "", ErrDenied},
		{base + "/rootx", []string{root}, "", ErrDenied}, // prefix, not a child
		{out + "/missing", []string{root}, "", ErrDenied},
		{root + "/missing", []string{root}, "", ErrNotFound},
		{root + "/file", []string{root}, "", ErrInvalid},
		{"sub", []string{root}, "", ErrInvalid},
		{root, nil, "", ErrDenied},
	}
	for _, tt := range tests {
		got, err := CheckCwd(tt.dir, tt.roots)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("%s: err %v, want %v", tt.dir, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: got %q %v, want %q", tt.dir, got, err, tt.want)
		}
	}
}

func TestEnv(t *testing.T) {
	base := SafeBaseEnv([]string{"PATH=/p", "HOME=/h", "SECRET=x", "AWS_SECRET_ACCESS_KEY=y", "LANG=C.UTF-8", "weird"})
	if !slices.Equal(base, []string{"HOME=/h", "LANG=C.UTF-8", "PATH=/p"}) {
		t.Errorf("base %v", base)
	}
	if b := SafeBaseEnv(nil); !slices.Equal(b, []string{"PATH=" + DefaultPath}) {
		t.Errorf("no PATH: %v", b)
	}
	env, err := MergeEnv(base, map[string]string{"HOME": "/x", "A": "b=c"}, false)
	if err != nil || !slices.Equal(env, []string{"A=b=c", "HOME=/x", "LANG=C.UTF-8", "PATH=/p"}) {
		t.Errorf("merge %v %v", env, err)
	}
	for _, k := range []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "BASH_ENV", "ENV", "BASH_FUNC_x%%", "DYLD_INSERT_LIBRARIES"} {
		if _, err := MergeEnv(base, map[string]string{k: "v"}, false); !errors.Is(err, ErrDenied) {
			t.Errorf("%s: %v, want denied", k, err)
		}
		if _, err := MergeEnv(base, map[string]string{k: "v"}, true); err != nil {
			t.Errorf("%s with *: %v", k, err)
		}
	}
	for _, kv := range [][2]string{{"", "v"}, {"A=B", "v"}, {"A", "v\x00"}} {
		if _, err := MergeEnv(base, map[string]string{kv[0]: kv[1]}, true); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v, want invalid", kv, err)
		}
	}
}
