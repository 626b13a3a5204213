// Package skills serves the skills under AIO_SKILLS_PATH for the MCP
// skills extension (SEP-2640, io.modelcontextprotocol/skills): each
// skill's SKILL.md frontmatter and the manifest of its files (sha256
// digest and size), read confined to the skill's directory.
//
// A root of the path that holds a SKILL.md is one skill; otherwise each
// of its subdirectories that holds one is (as sandbox_load_skill finds
// them). A skill is served as skill://<name>/..., name being its
// frontmatter name, which must follow the Agent Skills naming rules and
// equal the directory's name. Files are read through an os.Root opened on
// the skill directory, so neither ".." nor a symbolic link leads out of
// it; symbolic links are not served at all. The store re-reads the
// directories when asked and they changed (by modification time and
// size), so a skill added, edited or removed is seen without a restart.
package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Limits of SEP-2640: a skill with more files, or more bytes, is not
// served.
const (
	MaxFiles      = 512
	MaxTotalBytes = 16 << 20
)

// Scheme is the URI scheme skills are served under.
const Scheme = "skill://"

// DirMIME is the mimeType of a directory in a directory read.
const DirMIME = "inode/directory"

var nameRE = regexp.MustCompile(`^(?:[a-z0-9]|[a-z0-9][a-z0-9-]{0,62}[a-z0-9])$`)

// ValidName reports whether name follows the Agent Skills naming rules:
// 1-64 characters, lowercase letters, digits and hyphens, no leading,
// trailing or consecutive hyphen.
func ValidName(name string) bool { return nameRE.MatchString(name) && !strings.Contains(name, "--") }

// File is one file of a skill.
type File struct {
	Path   string // slash-separated, relative to the skill directory
	Size   int64
	Digest string // sha256:<64 lowercase hex>
}

// Skill is one served skill.
type Skill struct {
	Name        string
	Description string
	Frontmatter map[string]any
	Files       []File // SKILL.md first, then by path
	dir         string
	stamp       string
}

// URI is the skill's SKILL.md URI.
func (s *Skill) URI() string { return Scheme + s.Name + "/SKILL.md" }

// FileURI is the URI of the file at rel.
func (s *Skill) FileURI(rel string) string { return Scheme + s.Name + "/" + rel }

// Store finds and reads the skills of a set of roots.
type Store struct {
	roots []string
	mu    sync.Mutex
	cache map[string]*Skill // by directory
	// last scan, kept for a short while: a burst of requests scans once
	at     time.Time
	skills []*Skill
}

// scanEvery bounds how often the directories are re-scanned.
const scanEvery = 500 * time.Millisecond

// New returns a store over roots (AIO_SKILLS_PATH's entries).
func New(roots []string) *Store {
	var rs []string
	for _, r := range roots {
		if r = strings.TrimSpace(r); r != "" && filepath.IsAbs(r) {
			rs = append(rs, filepath.Clean(r))
		}
	}
	return &Store{roots: rs, cache: map[string]*Skill{}}
}

// FromEnv is the store over AIO_SKILLS_PATH (a list separated by the
// OS path list separator); nil when it is unset or empty.
func FromEnv(getenv func(string) string) *Store {
	v := getenv("AIO_SKILLS_PATH")
	if strings.TrimSpace(v) == "" {
		return nil
	}
	return New(filepath.SplitList(v))
}

// List returns the skills, sorted by name; of two with one name, the
// first root's.
func (st *Store) List() []*Skill {
	st.mu.Lock()
	defer st.mu.Unlock()
	if time.Since(st.at) < scanEvery && st.skills != nil {
		return st.skills
	}
	seen := map[string]bool{}
	var out []*Skill
	next := map[string]*Skill{}
	for _, dir := range st.skillDirs() {
		sk, err := st.load(dir)
		if err != nil || seen[sk.Name] {
			continue
		}
		seen[sk.Name] = true
		next[dir] = sk
		out = append(out, sk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	st.cache, st.skills, st.at = next, out, time.Now()
	return out
}

// Get finds a skill by name.
func (st *Store) Get(name string) *Skill {
	for _, s := range st.List() {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// skillDirs lists the candidate skill directories of the roots.
func (st *Store) skillDirs() []string {
	var dirs []string
	for _, r := range st.roots {
		if regular(filepath.Join(r, "SKILL.md")) {
			dirs = append(dirs, r)
			continue
		}
		ents, err := os.ReadDir(r)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() && regular(filepath.Join(r, e.Name(), "SKILL.md")) {
				dirs = append(dirs, filepath.Join(r, e.Name()))
			}
		}
	}
	return dirs
}

func regular(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

// load reads a skill directory, reusing the cached reading when no file
// changed.
func (st *Store) load(dir string) (*Skill, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	type ent struct {
		rel  string
		size int64
		mod  time.Time
	}
	var ents []ent
	var total int64
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 || (!d.IsDir() && !d.Type().IsRegular()) {
			return nil // links and special files are not served
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		ents = append(ents, ent{p, fi.Size(), fi.ModTime()})
		total += fi.Size()
		if len(ents) > MaxFiles || total > MaxTotalBytes {
			return fmt.Errorf("skill %s exceeds %d files or %d bytes", dir, MaxFiles, MaxTotalBytes)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var stamp strings.Builder
	for _, e := range ents {
		fmt.Fprintf(&stamp, "%s\x00%d\x00%d\x00", e.rel, e.size, e.mod.UnixNano())
	}
	if c := st.cache[dir]; c != nil && c.stamp == stamp.String() {
		return c, nil
	}
	md, err := root.ReadFile("SKILL.md")
	if err != nil {
		return nil, err
	}
	fm, err := Frontmatter(md)
	if err != nil {
		return nil, err
	}
	name, _ := fm["name"].(string)
	desc, _ := fm["description"].(string)
	if !ValidName(name) || desc == "" {
		return nil, errors.New("SKILL.md needs a valid name and a description")
	}
	if filepath.Base(dir) != name {
		return nil, fmt.Errorf("skill directory %s is not named %s", dir, name)
	}
	sk := &Skill{Name: name, Description: desc, Frontmatter: fm, dir: dir, stamp: stamp.String()}
	for _, e := range ents {
		d, n, err := digest(root, e.rel)
		if err != nil {
			return nil, err
		}
		sk.Files = append(sk.Files, File{Path: e.rel, Size: n, Digest: d})
	}
	sort.Slice(sk.Files, func(i, j int) bool {
		if (sk.Files[i].Path == "SKILL.md") != (sk.Files[j].Path == "SKILL.md") {
			return sk.Files[i].Path == "SKILL.md"
		}
		return sk.Files[i].Path < sk.Files[j].Path
	})
	return sk, nil
}

func digest(root *os.Root, rel string) (string, int64, error) {
	f, err := root.Open(rel)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, MaxTotalBytes+1))
	if err != nil {
		return "", 0, err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), n, nil
}

// ErrNotFound is returned for a URI that names no served file or
// directory.
var ErrNotFound = errors.New("no such skill resource")

// split parses skill://<name>[/<rel>] into the skill and a clean
// relative path ("" for the skill's directory).
func (st *Store) split(uri string) (*Skill, string, error) {
	rest, ok := strings.CutPrefix(uri, Scheme)
	if !ok {
		return nil, "", ErrNotFound
	}
	name, rel, _ := strings.Cut(rest, "/")
	rel = strings.TrimSuffix(rel, "/")
	if rel != "" && (!fs.ValidPath(rel) || path.Clean(rel) != rel) {
		return nil, "", ErrNotFound
	}
	sk := st.Get(name)
	if sk == nil {
		return nil, "", ErrNotFound
	}
	return sk, rel, nil
}

// Read returns the content and mimeType of the file uri names; only the
// files of a skill's manifest are read, through its directory's os.Root.
func (st *Store) Read(uri string) ([]byte, string, error) {
	sk, rel, err := st.split(uri)
	if err != nil || rel == "" {
		return nil, "", ErrNotFound
	}
	listed := false
	for _, f := range sk.Files {
		if f.Path == rel {
			listed = true
			break
		}
	}
	if !listed {
		return nil, "", ErrNotFound
	}
	root, err := os.OpenRoot(sk.dir)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	fi, err := root.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, "", ErrNotFound
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, "", ErrNotFound
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxTotalBytes))
	if err != nil {
		return nil, "", err
	}
	return b, MIMEType(rel), nil
}

// Entry is one child in a directory read.
type Entry struct {
	URI      string
	Name     string
	MIMEType string
}

// ReadDir lists the direct children of the skill directory uri names
// (the skill itself, or a directory inside it): files of the manifest
// and the directories that hold some. ErrNotFound for anything else (a
// file, an unknown skill).
func (st *Store) ReadDir(uri string) ([]Entry, error) {
	sk, rel, err := st.split(uri)
	if err != nil {
		return nil, err
	}
	prefix := ""
	if rel != "" {
		prefix = rel + "/"
	}
	dirs := map[string]bool{}
	var out []Entry
	found := rel == ""
	for _, f := range sk.Files {
		rest, ok := strings.CutPrefix(f.Path, prefix)
		if !ok {
			continue
		}
		found = true
		if d, _, sub := strings.Cut(rest, "/"); sub {
			if !dirs[d] {
				dirs[d] = true
				out = append(out, Entry{URI: sk.FileURI(prefix + d), Name: d, MIMEType: DirMIME})
			}
			continue
		}
		out = append(out, Entry{URI: sk.FileURI(f.Path), Name: rest, MIMEType: MIMEType(f.Path)})
	}
	if !found {
		return nil, ErrNotFound
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URI < out[j].URI })
	return out, nil
}

// MIMEType guesses a file's type from its extension (text/markdown for
// .md).
func MIMEType(p string) string {
	switch ext := strings.ToLower(path.Ext(p)); ext {
	case ".md":
		return "text/markdown"
	case ".txt", "":
		return "text/plain"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
	}
	return "application/octet-stream"
}
