package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/filedigest"
	"github.com/aiodhq/aiod/host/internal/pathx"
)

// DefaultWatchDebounce is WatchOptions.Debounce when zero: how long the
// plugins directory must be quiet after a change before it is reloaded
// (a change already complete waits only settle: Watcher).
const DefaultWatchDebounce = 100 * time.Millisecond

// WatchOptions configure Watch.
type WatchOptions struct {
	// Dir is the plugins directory; Policy, when set, the policy file.
	Dir    string
	Policy string
	// Debounce is how long the directory must be quiet before a reload
	// (zero: DefaultWatchDebounce).
	Debounce time.Duration
	// Reload reloads the host; its report (nil when no new generation was
	// made) and error decide whether a refused package is retried.
	Reload func(context.Context) (*Report, error)
	Logger *slog.Logger
}

// Watcher reloads the host when the plugins directory (or a package in
// it, or the policy file) changes. Events are debounced: the directory
// must be quiet for the debounce interval, so a package being copied in is
// read once it is complete; but when every package the events touched is
// provably complete already (gone, or its module matches the sha256 its
// manifest pins: a link or directory renamed into place) and the policy
// file parses, the reload starts after a short settle instead (settle).
// A reload that refused a package is retried a few times, as a copy may
// still be settling; a refused new version never replaces a working one
// (Registry.Reload).
type Watcher struct {
	w        *fsnotify.Watcher
	dir      string
	policy   string
	debounce time.Duration
	reload   func(context.Context) (*Report, error)
	log      *slog.Logger
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
	targets  map[string]string // watched package path -> the directory it resolved to
	digests  filedigest.Cache  // the modules packageComplete hashed
	// touched names the packages (and the policy file, "") changed since
	// the last reload; quiet is when the last event came
	touched map[string]bool
	last    time.Time
}

// settle is how long the directory must be quiet before a reload of
// packages that are complete already (Watcher): one burst of events (a
// rename, a link replaced) is over by then.
const settle = 5 * time.Millisecond

// watchRetries and watchRetryDelay bound the retries of a reload that
// refused a package.
const (
	watchRetries    = 5
	watchRetryDelay = 500 * time.Millisecond
)

// Watch starts watching o.Dir (and o.Policy); Close stops it.
func Watch(o WatchOptions) (*Watcher, error) {
	dir, policy, debounce, log := o.Dir, o.Policy, o.Debounce, o.Logger
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	if debounce <= 0 {
		debounce = DefaultWatchDebounce
	}
	// events name paths below the absolute directory, which pathx.Within
	// compares
	abs := dir
	if a, err := filepath.Abs(dir); err == nil {
		abs = a
	}
	w := &Watcher{w: fw, dir: abs, debounce: debounce, reload: o.Reload, log: log,
		stop: make(chan struct{}), done: make(chan struct{}), targets: map[string]string{}}
	if err := fw.Add(abs); err != nil {
		fw.Close()
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	if policy != "" {
		// the policy file's directory: editors and deploy tools replace
		// the file by renaming a new one over it
		if abs, err := filepath.Abs(policy); err == nil {
			w.policy = abs
			if err := fw.Add(filepath.Dir(abs)); err != nil {
				log.Warn("policy file not watched", "err", err)
			}
		}
	}
	w.sync()
	go w.loop()
	log.Info("watching the plugins directory", "dir", dir, "debounce", debounce)
	return w, nil
}

// sync watches every package directory; a link is watched at its target,
// and when it is pointed elsewhere the old target's watch is dropped
// (else each deployed version would keep an inotify watch). Removed
// directories drop out of the watch list by themselves.
func (w *Watcher) sync() {
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		w.log.Warn("watch: read plugins directory", "err", err)
		return
	}
	seen := map[string]bool{}
	for _, e := range ents {
		p := filepath.Join(w.dir, e.Name())
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() {
			continue
		}
		seen[p] = true
		if prev, ok := w.targets[p]; ok && prev == real {
			continue
		} else if ok {
			w.w.Remove(p)
		}
		if err := w.w.Add(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			w.log.Debug("watch: add", "dir", p, "err", err)
			continue
		}
		w.targets[p] = real
	}
	for p := range w.targets {
		if !seen[p] {
			w.w.Remove(p)
			delete(w.targets, p)
		}
	}
}

// relevant reports whether an event can change what the registry loads:
// anything under the plugins directory (package directories are watched
// by their path there, links included) but a mode change, and the policy
// file.
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	return ev.Name == w.policy || (ev.Name != w.dir && pathx.Within(ev.Name, w.dir))
}

func (w *Watcher) loop() {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	retries := 0
	for {
		select {
		case <-w.stop:
			timer.Stop()
			return
		case err, ok := <-w.w.Errors:
			if !ok {
				return
			}
			w.log.Warn("watch error", "err", err)
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			if !w.relevant(ev) {
				continue
			}
			w.log.Debug("watch event", "event", ev.String())
			retries = 0
			w.touch(ev.Name)
			timer.Reset(min(settle, w.debounce))
		case <-timer.C:
			if quiet := time.Since(w.last); quiet < w.debounce && !w.complete() {
				timer.Reset(w.debounce - quiet)
				continue
			}
			clear(w.touched)
			w.sync()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			rep, err := w.reload(ctx)
			cancel()
			if err != nil && rep != nil && retries < watchRetries {
				// a refused package may still be being written: try again
				retries++
				timer.Reset(watchRetryDelay)
			}
		}
	}
}

// touch notes the package (or the policy file) an event names.
func (w *Watcher) touch(name string) {
	w.last = time.Now()
	if w.touched == nil {
		w.touched = map[string]bool{}
	}
	if name == w.policy {
		w.touched[""] = true
		return
	}
	rel, err := filepath.Rel(w.dir, name)
	if err != nil {
		return
	}
	pkg, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	w.touched[pkg] = true
}

// complete reports whether every package touched since the last reload is
// gone or complete (its manifest parses and pins the sha256 its module
// has), and the policy file, if touched, parses: then nothing is being
// written that the debounce would wait for. A package whose manifest pins
// no digest cannot be told from one half-written: false.
func (w *Watcher) complete() bool {
	for pkg := range w.touched {
		if pkg == "" {
			if b, err := os.ReadFile(w.policy); err != nil {
				return false
			} else if _, err := caps.ParsePolicy(b); err != nil {
				return false
			}
			continue
		}
		// (the temporary name of a link or directory renamed over a
		// package is gone once renamed)
		if !packageComplete(filepath.Join(w.dir, pkg), &w.digests) {
			return false
		}
	}
	return true
}

// packageComplete reports whether the package at dir is gone, or holds a
// manifest that parses and pins the sha256 of the module beside it.
//
// digests knows the modules hashed before: a package relinked to a version
// already seen (an A/B swap back, a rollback) is not hashed again.
func packageComplete(dir string, digests *filedigest.Cache) bool {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return true
	}
	mb, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return false
	}
	m, err := caps.ParseManifest(mb)
	if err != nil || m.SHA256 == "" {
		return false
	}
	mod := m.Module
	if mod == "" {
		mod = "plugin.wasm"
	}
	f, err := os.Open(filepath.Join(dir, mod))
	if err != nil {
		return false
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return false
	}
	if d, ok := digests.Lookup(before); ok {
		return d == m.SHA256
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	d := hex.EncodeToString(h.Sum(nil))
	if after, err := f.Stat(); err == nil {
		digests.Remember(before, after, d)
	}
	return d == m.SHA256
}

// Close stops watching. Idempotent.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.stop)
		err = w.w.Close()
		<-w.done
	})
	return err
}
