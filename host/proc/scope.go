package proc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/aiodhq/aiod/host/internal/pathx"
)

// SafeBaseNames are the variables a child inherits from the host
// environment; everything else must be passed explicitly.
var SafeBaseNames = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE",
	"LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ", "TMPDIR",
}

// DefaultPath is PATH when the host environment has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// SafeBaseEnv keeps the SafeBaseNames of environ (KEY=VALUE strings) and
// sets PATH to DefaultPath if it is missing.
func SafeBaseEnv(environ []string) []string {
	var out []string
	hasPath := false
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !slices.Contains(SafeBaseNames, k) {
			continue
		}
		hasPath = hasPath || k == "PATH"
		out = append(out, kv)
	}
	if !hasPath {
		out = append(out, "PATH="+DefaultPath)
	}
	sort.Strings(out)
	return out
}

// envGet returns the value of k in env (KEY=VALUE strings).
func envGet(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if kk, v, ok := strings.Cut(env[i], "="); ok && kk == k {
			return v
		}
	}
	return ""
}

// restrictedEnv reports whether a variable may only be set under the "*"
// grant: it makes an allowed program load or run code of the caller's
// choosing without being named on the command line.
func restrictedEnv(k string) bool {
	return strings.HasPrefix(k, "LD_") || strings.HasPrefix(k, "DYLD_") ||
		strings.HasPrefix(k, "BASH_FUNC_") || k == "BASH_ENV" || k == "ENV"
}

// MergeEnv returns base overridden by extra, sorted. Keys must be non-empty
// without '=' or NUL, values without NUL. Unless anyProgram, the variables
// of restrictedEnv are refused with ErrDenied.
func MergeEnv(base []string, extra map[string]string, anyProgram bool) ([]string, error) {
	m := make(map[string]string, len(base)+len(extra))
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	for k, v := range extra {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, errorf(ErrInvalid, "bad environment variable %q", k)
		}
		if !anyProgram && restrictedEnv(k) {
			return nil, errorf(ErrDenied, "environment variable %s may only be set with the \"*\" command grant", k)
		}
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// lookIn finds name the way a shell would: a name with a slash must be an
// absolute path to an executable file; a bare name is searched in the
// absolute directories of searchPath (empty and relative entries are
// skipped).
func lookIn(name, searchPath string) (string, error) {
	if strings.ContainsRune(name, '/') {
		p, ok := cleanAbs(name)
		if !ok {
			return "", errorf(ErrInvalid, "program %q: a path must be absolute", name)
		}
		if !isExecutable(p) {
			return "", errorf(ErrNotFound, "program %s not found or not executable", p)
		}
		return p, nil
	}
	for _, dir := range filepath.SplitList(searchPath) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", errorf(ErrNotFound, "program %q not found on PATH", name)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// ResolveProgram checks a program against the granted commands and returns
// the path to execute.
//
// The rule: "*" allows any program, looked up on childPATH (the PATH the
// child will get). Otherwise the program is looked up on the host's base
// PATH (Config.BaseEnv), never on one the caller chose, and an entry allows
// it when both
//   - the entry's base name equals the program's base name, and
//   - the entry (an absolute path, or a bare name looked up on the base
//     PATH) and the program resolve, after symlinks, to the same file.
//
// So "git" allows "git" and "/usr/bin/git" but not a "git" elsewhere, and
// a multi-call binary (busybox) allows only the applets named in the grant.
// The grant is an allow-list of entry points, not a sandbox: an allowed
// interpreter or a tool that runs hooks runs whatever it is told to.
func (m *Manager) ResolveProgram(name string, allowed []string, childPATH string) (string, error) {
	if name == "" || strings.ContainsRune(name, 0) {
		return "", errorf(ErrInvalid, "bad program name %q", name)
	}
	if slices.Contains(allowed, "*") {
		if childPATH == "" {
			childPATH = envGet(m.cfg.BaseEnv, "PATH")
		}
		return lookIn(name, childPATH)
	}
	basePATH := envGet(m.cfg.BaseEnv, "PATH")
	p, err := lookIn(name, basePATH)
	if err != nil {
		if errors.Is(err, ErrNotFound) && !m.nameAllowed(name, allowed) {
			return "", errorf(ErrDenied, "program %q is not in the granted commands", name)
		}
		return "", err
	}
	real := realPath(p)
	base := filepath.Base(p)
	for _, a := range allowed {
		if filepath.Base(a) != base {
			continue
		}
		ap := a
		if !strings.ContainsRune(a, '/') {
			var err error
			if ap, err = lookIn(a, basePATH); err != nil {
				continue
			}
		}
		if realPath(ap) == real {
			return p, nil
		}
	}
	return "", errorf(ErrDenied, "program %q (%s) is not in the granted commands", name, p)
}

func (m *Manager) nameAllowed(name string, allowed []string) bool {
	for _, a := range allowed {
		if a == name || filepath.Base(a) == filepath.Base(name) {
			return true
		}
	}
	return false
}

// CheckCwd checks that dir is an existing directory inside one of roots,
// after resolving symlinks in both, and returns its resolved path. dir must
// be absolute. A dir that does not resolve is ErrNotFound if it lies inside
// a root as written, else ErrDenied (so existence outside the roots is not
// revealed).
func CheckCwd(dir string, roots []string) (string, error) {
	if strings.ContainsRune(dir, 0) {
		return "", errorf(ErrInvalid, "bad cwd %q", dir)
	}
	clean, ok := cleanAbs(dir)
	if !ok {
		return "", errorf(ErrInvalid, "cwd %q must be an absolute path", dir)
	}
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		for _, r := range roots {
			if pathx.Within(clean, r) || pathx.Within(clean, realPath(r)) {
				if errors.Is(err, fs.ErrNotExist) {
					return "", errorf(ErrNotFound, "cwd %s does not exist", clean)
				}
				return "", errorf(ErrInvalid, "cwd %s: %v", clean, err)
			}
		}
		return "", errorf(ErrDenied, "cwd %s is outside the granted directories", clean)
	}
	for _, r := range roots {
		if pathx.Within(real, realPath(r)) {
			fi, err := os.Stat(real)
			if err != nil || !fi.IsDir() {
				return "", errorf(ErrInvalid, "cwd %s is not a directory", clean)
			}
			return real, nil
		}
	}
	if real != clean {
		return "", errorf(ErrDenied, "cwd %s resolves to %s, outside the granted directories", clean, real)
	}
	return "", errorf(ErrDenied, "cwd %s is outside the granted directories", clean)
}
