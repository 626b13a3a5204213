package filedigest

import (
	"io/fs"
	"syscall"
)

func keyOf(fi fs.FileInfo) (key, bool) {
	if fi == nil {
		return key{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return key{}, false
	}
	return key{uint64(st.Dev), uint64(st.Ino), st.Size, timespec(st.Mtim), timespec(st.Ctim)}, true
}

func timespec(t syscall.Timespec) int64 { return t.Sec*1e9 + t.Nsec }
