// Package pathx holds the one path-containment check the host's scope
// checks share (the caps grant intersection, the files roots, the process
// working directory).
package pathx

import (
	"path/filepath"
	"strings"
)

// Within reports whether path p is root itself or lies below it. Both must be
// absolute; a relative p or root is never within anything. The comparison is
// lexical, on the cleaned paths: "/srv/a/../b" is within "/srv", "/srv/.." is
// not, "/srv/" is "/srv", and "/srvx" is not within "/srv". Symbolic links
// are not followed; a caller that must resolve them does so first and checks
// the resolved path.
func Within(p, root string) bool {
	if !filepath.IsAbs(p) || !filepath.IsAbs(root) {
		return false
	}
	p, root = filepath.Clean(p), filepath.Clean(root)
	if p == root {
		return true
	}
	if strings.HasSuffix(root, string(filepath.Separator)) { // the file system root
		return true
	}
	return strings.HasPrefix(p, root) && p[len(root)] == filepath.Separator
}
