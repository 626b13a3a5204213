package buildid

import (
	"encoding/binary"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSelfMatchesGoTool: the ID read is the one `go tool buildid` reports
// for the same file.
func TestSelfMatchesGoTool(t *testing.T) {
	id, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not on PATH: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "tool", "buildid", self).Output()
	if err != nil {
		t.Fatalf("go tool buildid: %v", err)
	}
	if want := strings.TrimSpace(string(out)); id != want {
		t.Fatalf("read %q, go tool buildid says %q", id, want)
	}
}

func TestParseNote(t *testing.T) {
	le := binary.LittleEndian
	note := func(namesz, descsz, typ uint32, name, desc string) []byte {
		b := le.AppendUint32(nil, namesz)
		b = le.AppendUint32(b, descsz)
		b = le.AppendUint32(b, typ)
		return append(append(b, name...), desc...)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want string // "" for an error
	}{
		{"ok", note(4, 5, 4, "Go\x00\x00", "ab/cd"), "ab/cd"},
		{"short", []byte{1, 2, 3}, ""},
		{"other type", note(4, 5, 3, "Go\x00\x00", "ab/cd"), ""},
		{"other owner", note(4, 5, 4, "GNU\x00", "ab/cd"), ""},
		{"description past the end", note(4, 50, 4, "Go\x00\x00", "ab/cd"), ""},
		{"huge description size", note(4, 0xffffffff, 4, "Go\x00\x00", "ab/cd"), ""},
		{"empty", note(4, 0, 4, "Go\x00\x00", ""), ""},
	} {
		got, err := parseNote(c.b, le)
		if c.want == "" {
			if err == nil {
				t.Errorf("%s: %q, want an error", c.name, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func FuzzParseNote(f *testing.F) {
	f.Add([]byte("\x04\x00\x00\x00\x05\x00\x00\x00\x04\x00\x00\x00Go\x00\x00ab/cd"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := parseNote(b, binary.LittleEndian)
		if err == nil && (id == "" || len(id) > len(b)) {
			t.Fatalf("%q from %d bytes", id, len(b))
		}
	})
}
