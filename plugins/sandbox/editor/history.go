package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Undo history. Each edited path has a stack of the versions its edits
// replaced, newest last, kept in the aiod:state family (per plugin and
// owner, in the host's memory) because a pooled instance may be discarded
// between calls. The stack is one JSON value under a key derived from the
// path.
const (
	maxLevels  = 10      // versions kept per path (openhands-aci keeps 10)
	maxVersion = 4 << 20 // a larger previous version is not kept
)

// version is one entry of a path's history: the content before an edit,
// or Absent when the edit created the file.
type version struct {
	Content string `json:"c,omitempty"`
	Absent  bool   `json:"a,omitempty"`
}

// kv is the history's store; the aiod:state family in the plugin, a map
// in tests.
type kv interface {
	Get(key string) (string, bool, error)
	Set(key, value string) error
	Delete(key string) error
}

var store kv = stateKV{}

func historyKey(p string) string {
	if len(p) <= 900 {
		return "undo:" + p
	}
	sum := sha256.Sum256([]byte(p))
	return "undo#" + hex.EncodeToString(sum[:])
}

func loadHistory(p string) []version {
	s, ok, err := store.Get(historyKey(p))
	if err != nil || !ok {
		return nil
	}
	var h []version
	if json.Unmarshal([]byte(s), &h) != nil {
		return nil
	}
	return h
}

func saveHistory(p string, h []version) {
	key := historyKey(p)
	for len(h) > 0 {
		b, _ := json.Marshal(h)
		if store.Set(key, string(b)) == nil {
			return
		}
		// Over the state budget: keep fewer levels.
		h = h[len(h)/2+len(h)%2:]
		if len(h) == 0 {
			break
		}
	}
	_ = store.Delete(key)
}

// pushHistory records the version an edit of p replaced. A version too
// large to keep drops the path's history (so an undo never skips it).
func pushHistory(p string, v version) {
	if len(v.Content) > maxVersion {
		_ = store.Delete(historyKey(p))
		return
	}
	h := append(loadHistory(p), v)
	if len(h) > maxLevels {
		h = h[len(h)-maxLevels:]
	}
	saveHistory(p, h)
}

// popHistory removes and returns the newest version of p.
func popHistory(p string) (version, bool) {
	h := loadHistory(p)
	if len(h) == 0 {
		return version{}, false
	}
	v := h[len(h)-1]
	h = h[:len(h)-1]
	if len(h) == 0 {
		_ = store.Delete(historyKey(p))
	} else {
		saveHistory(p, h)
	}
	return v, true
}
