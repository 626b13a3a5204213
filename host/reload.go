package host

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
	"github.com/aiodhq/aiod/host/plugin"
)

// DefaultWatchDebounce is Config.WatchDebounce when zero: how long the
// plugins directory must be quiet after a change before it is reloaded
// (a change already complete waits only settle: watcher).
const DefaultWatchDebounce = 100 * time.Millisecond

// ReloadResult is what one reload did: the registry's report, and whether
// the policy file was read anew or kept because it did not parse.
type ReloadResult struct {
	*plugin.Report
	// PolicyError is why the policy file was not taken (the previous
	// policy keeps applying); empty when it was, or there is none.
	PolicyError string `json:"policy_error"`
}

// Reload rebuilds the plugin catalogue from the built-ins and the plugins
// directory (what SIGHUP, the watcher and POST /admin/reload do), after
// reading the policy file again. The new catalogue is swapped in
// atomically; a plugin whose new version fails to load keeps its previous
// version serving, and the load errors are returned joined. A policy file
// that no longer reads or parses is logged and the previous policy kept.
func (h *Host) Reload(ctx context.Context) error {
	_, err := h.reload(ctx)
	return err
}

func (h *Host) reload(ctx context.Context) (*ReloadResult, error) {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	res := &ReloadResult{}
	if h.cfg.PolicyFile != "" {
		p, err := readPolicy(h.cfg.PolicyFile)
		if err != nil {
			h.log.Error("policy file refused; the previous policy keeps applying", "err", err)
			res.PolicyError = err.Error()
		} else {
			h.reg.SetPolicy(p, builtinPolicy(p))
			h.tenancy.update(p, h.cfg.APIKey)
		}
		h.policyErr.Store(&res.PolicyError)
	}
	h.reloadStateKeys()
	rep, err := h.reg.ReloadReport(ctx)
	res.Report = rep
	if err != nil {
		h.log.Warn("reload finished with errors", "err", err)
	} else {
		h.log.Info("reload done", "tools", len(h.reg.Catalog().Tools))
	}
	return res, err
}

// readPolicy reads and parses the operator's policy file.
func readPolicy(path string) (*caps.Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	p, err := caps.ParsePolicy(b)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}

// adminReload is POST /admin/reload: the reload's report, with its load
// errors inside it; an error only when no new generation was made.
func (h *Host) adminReload(ctx context.Context) (any, error) {
	res, err := h.reload(ctx)
	if res.Report == nil {
		return res, err
	}
	return res, nil
}

// adminPlugins is GET /admin/plugins.
func (h *Host) adminPlugins() any {
	cat := h.reg.Catalog()
	type entry struct {
		Name       string   `json:"name"`
		Version    string   `json:"version"`
		SHA256     string   `json:"sha256"`
		Builtin    bool     `json:"builtin"`
		Source     string   `json:"source"`
		Tools      []string `json:"tools"`
		Instances  int      `json:"idle_instances"`
		Dormant    bool     `json:"dormant"`
		Families   []string `json:"families"`
		LoadError  string   `json:"last_load_error"`
		Generation uint64   `json:"generation"`
	}
	out := []entry{}
	for _, p := range cat.Plugins {
		e := entry{Name: p.Manifest.Name, Version: p.Manifest.Version, SHA256: p.Digest, Builtin: p.Builtin,
			Source: p.Source, Tools: []string{}, Families: []string{}, Instances: p.IdleInstances(plugin.DefaultOwner),
			Dormant: p.Dormant(), LoadError: cat.LoadError(p.Manifest.Name), Generation: cat.Generation}
		for _, t := range p.Manifest.Tools {
			e.Tools = append(e.Tools, t.Name)
		}
		for _, f := range p.Grant.GrantedFamilies() {
			e.Families = append(e.Families, string(f))
		}
		out = append(out, e)
	}
	policyErr := ""
	if p := h.policyErr.Load(); p != nil {
		policyErr = *p
	}
	return map[string]any{"generation": cat.Generation, "plugins": out, "refused": cat.LoadErrors(), "policy_error": policyErr}
}

// watcher reloads the host when the plugins directory (or a package in
// it, or the policy file) changes. Events are debounced: the directory
// must be quiet for the debounce interval, so a package being copied in is
// read once it is complete; but when every package the events touched is
// provably complete already (gone, or its module matches the sha256 its
// manifest pins: a link or directory renamed into place) and the policy
// file parses, the reload starts after a short settle instead (settle).
// A reload that refused a package is retried a few times, as a copy may
// still be settling; a refused new version never replaces a working one
// (plugin.Registry.Reload).
type watcher struct {
	w        *fsnotify.Watcher
	dir      string
	policy   string
	debounce time.Duration
	reload   func(context.Context) (*ReloadResult, error)
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
// packages that are complete already (watcher): one burst of events (a
// rename, a link replaced) is over by then.
const settle = 5 * time.Millisecond

// watchRetries and watchRetryDelay bound the retries of a reload that
// refused a package.
const (
	watchRetries    = 5
	watchRetryDelay = 500 * time.Millisecond
)

func startWatcher(dir, policy string, debounce time.Duration, reload func(context.Context) (*ReloadResult, error), log *slog.Logger) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	if debounce <= 0 {
		debounce = DefaultWatchDebounce
	}
	w := &watcher{w: fw, dir: dir, debounce: debounce, reload: reload, log: log,
		stop: make(chan struct{}), done: make(chan struct{}), targets: map[string]string{}}
	if err := fw.Add(dir); err != nil {
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
func (w *watcher) sync() {
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
func (w *watcher) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	return ev.Name == w.policy || isUnder(ev.Name, w.dir)
}

func isUnder(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}

func (w *watcher) loop() {
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
			res, err := w.reload(ctx)
			cancel()
			if err != nil && res != nil && res.Report != nil && retries < watchRetries {
				// a refused package may still be being written: try again
				retries++
				timer.Reset(watchRetryDelay)
			}
		}
	}
}

// touch notes the package (or the policy file) an event names.
func (w *watcher) touch(name string) {
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
func (w *watcher) complete() bool {
	for pkg := range w.touched {
		if pkg == "" {
			if _, err := readPolicy(w.policy); err != nil {
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
func (w *watcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.stop)
		err = w.w.Close()
		<-w.done
	})
	return err
}
