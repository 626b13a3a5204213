package e2e

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// blockDevice is an ext4 file system on a loop device over an image file,
// mounted: what the data directory sits on in TestStatePowerCut.
type blockDevice struct {
	image, loop, mnt string
}

// powerCutTools finds what the power cut needs: root, a loop device and
// e2fsprogs. Missing, the test fails in CI and is skipped elsewhere.
func powerCutTools(t *testing.T) {
	t.Helper()
	why := ""
	switch {
	case os.Geteuid() != 0:
		why = "it must run as root (loop devices, mount)"
	case !exists("/dev/loop-control"):
		why = "no /dev/loop-control: the kernel has no loop devices here"
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil && why == "" {
			why = tool + " is missing (util-linux, e2fsprogs)"
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("the power cut cannot be simulated: " + why)
	}
	t.Skip("the power cut cannot be simulated: " + why)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// attach puts image on a free loop device and mounts it at mnt (ext4
// replays its journal there, as after a power cut); the test's end
// unmounts and detaches it.
func attach(t *testing.T, image, mnt string) *blockDevice {
	t.Helper()
	d := &blockDevice{image: image, mnt: mnt}
	d.loop = run(t, "losetup", "--find", "--show", image)
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "ext4", d.loop, mnt).CombinedOutput(); err != nil {
		_ = exec.Command("losetup", "-d", d.loop).Run()
		t.Fatalf("mount %s: %v\n%s", d.loop, err, out)
	}
	t.Cleanup(func() { d.detach(t) })
	return d
}

func (d *blockDevice) detach(t *testing.T) {
	if d.loop == "" {
		return
	}
	if out, err := exec.Command("umount", d.mnt).CombinedOutput(); err != nil {
		t.Logf("umount %s: %v %s (lazily instead)", d.mnt, err, out)
		_ = exec.Command("umount", "-l", d.mnt).Run()
	}
	if out, err := exec.Command("losetup", "-d", d.loop).CombinedOutput(); err != nil {
		t.Logf("losetup -d %s: %v %s", d.loop, err, out)
	}
	d.loop = ""
}

// stopped waits until every thread of pid is stopped (SIGSTOP taken).
func stopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "stat"))
		all := len(tasks) > 0
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			// pid (comm) STATE ...: the state follows the last ')'
			if i := bytes.LastIndexByte(b, ')'); i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
				all = false
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("aiod (%d) did not stop on SIGSTOP", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStatePowerCut: bin/aiod with --data-dir on an ext4 file system on
// a loop device, 8 clients adding to their own counters as fast as it
// answers. The power is cut in the middle: aiod is frozen (SIGSTOP: no
// write or fsync is issued after, none is half issued), and the device
// is copied as it stands, which holds what was flushed to it and not
// what sits in the page cache unsynced (a file written just before the
// cut without fsync shows it: it is not in the copy). The copy, mounted
// (ext4 replays its journal) under a new aiod, has every counter at least
// at the last value its client saw acknowledged.
func TestStatePowerCut(t *testing.T) {
	defaultEngine(t, "durability is the store's, host-side")
	powerCutTools(t)
	t.Parallel()
	work := t.TempDir()
	image := filepath.Join(work, "disk.img")
	f, err := os.Create(image)
	if err == nil {
		err = f.Truncate(64 << 20)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	run(t, "mkfs.ext4", "-q", "-F", image)
	dev := attach(t, image, filepath.Join(work, "mnt"))
	data := filepath.Join(dev.mnt, "data")
	policy := statePolicy(t, nil)
	a := startTally(t, policy, "--data-dir", data)

	const clients = 8
	acked := make([]atomic.Int64, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := count(a.URL, "", "c"+strconv.Itoa(i))
				if err != nil {
					return // the cut
				}
				if last := acked[i].Load(); int64(n) != last+1 {
					t.Errorf("client %d: counter went from %d to %d", i, last, n)
				}
				acked[i].Store(int64(n))
			}
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		time.Sleep(300 * time.Millisecond)
		ready := true
		for i := range clients {
			ready = ready && acked[i].Load() >= 20
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the clients made no progress\n%s", a.Logs())
		}
	}
	// written, never synced: the cut must lose it
	unsynced := []byte("written just before the cut, never fsynced\n")
	if err := os.WriteFile(filepath.Join(dev.mnt, "unsynced.txt"), unsynced, 0o644); err != nil {
		t.Fatal(err)
	}
	// the cut
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped(t, a.cmd.Process.Pid)
	cut := filepath.Join(work, "cut.img")
	copyFile(t, image, cut)
	// every answer the frozen aiod wrote before the cut was acknowledged
	// after its fsync: the clients have them all now, or never will
	time.Sleep(200 * time.Millisecond)
	last, total := make([]int64, clients), int64(0)
	for i := range acked {
		last[i] = acked[i].Load()
		total += last[i]
	}
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Process.Signal(syscall.SIGCONT)
	wg.Wait()
	_ = a.cmd.Wait()
	t.Logf("power cut after %d acknowledged sets: %v", total, last)
	dev.detach(t)

	after := attach(t, cut, filepath.Join(work, "after"))
	if b, err := os.ReadFile(filepath.Join(after.mnt, "unsynced.txt")); err == nil && bytes.Equal(b, unsynced) {
		t.Fatal("the unsynced file survived the cut: the copy is not what a power cut leaves, the test proves nothing")
	}
	b := startTally(t, policy, "--data-dir", filepath.Join(after.mnt, "data"))
	for i := range clients {
		n := mustCount(t, b.URL, "", "c"+strconv.Itoa(i))
		if int64(n) < last[i]+1 || int64(n) > last[i]+2 {
			t.Errorf("counter c%d after the power cut is %d: the last value acknowledged was %d (want %d or %d)", i, n-1, last[i], last[i], last[i]+1)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
