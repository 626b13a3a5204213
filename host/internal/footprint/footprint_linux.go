package footprint

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// DropExecutablePages returns to the page cache the pages of aiod's own
// read-only, file-backed mappings (the binary's rodata: chiefly the
// embedded built-in modules, ~50 MB, which the start-up compiles read
// once). They are clean copies of the file: dropping them from the
// process (madvise MADV_DONTNEED) loses nothing, and a later read faults
// them back in from the page cache. A mapping holding any private
// (written) page is left alone: a relocated read-only segment of a
// dynamically linked binary has such pages, and dropping them would undo
// the relocations. It returns the bytes dropped.
func DropExecutablePages() int64 {
	exe, err := os.Executable()
	if err != nil {
		return 0
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0
	}
	defer f.Close()
	type mapping struct {
		start, end uintptr
		ours       bool
		rss, anon  int64
		dirty      int64
	}
	var maps []mapping
	var cur *mapping
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		fields := bytes.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if !bytes.HasSuffix(fields[0], []byte(":")) { // a mapping's header
			maps = append(maps, mapping{})
			cur = &maps[len(maps)-1]
			rng := bytes.SplitN(fields[0], []byte("-"), 2)
			if len(rng) != 2 || len(fields) < 6 {
				continue
			}
			lo, err1 := strconv.ParseUint(string(rng[0]), 16, 64)
			hi, err2 := strconv.ParseUint(string(rng[1]), 16, 64)
			cur.start, cur.end = uintptr(lo), uintptr(hi)
			cur.ours = err1 == nil && err2 == nil && string(fields[1]) == "r--p" && string(fields[5]) == exe
			continue
		}
		if cur == nil || len(fields) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(string(fields[1]), 10, 64)
		switch string(fields[0]) {
		case "Rss:":
			cur.rss = n << 10
		case "Anonymous:":
			cur.anon = n << 10
		case "Private_Dirty:", "Shared_Dirty:":
			cur.dirty += n << 10
		}
	}
	var dropped int64
	for _, m := range maps {
		if !m.ours || m.anon != 0 || m.dirty != 0 || m.rss == 0 || m.end <= m.start {
			continue
		}
		// the range is the kernel's, not a Go object: a raw call
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); e == 0 {
			dropped += m.rss
		}
	}
	return dropped
}
