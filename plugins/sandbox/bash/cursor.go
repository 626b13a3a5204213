package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/aiodhq/aiod/sdk/state"
)

// Paging a truncated output (seed 002's truncated / next_cursor): the
// part of the output past the first truncateChars characters is kept in
// the plugin's state (per client, in host memory, at most stateBytes in
// all) for cursorLifetime; next_cursor names it and the byte offset of
// the next page, and a call with {"cursor": ...} answers that page with
// the command's status, exit code and cwd, plus truncated and
// next_cursor while more remain.

const (
	// cursorLifetime is how long the rest of an output can be fetched.
	cursorLifetime = 10 * time.Minute
	// cursorPrefix prefixes the state keys: cursorPrefix + expiry
	// (unix seconds, fixed width so keys sort by expiry) + "." + random.
	cursorPrefix = "cursor/"
	// stateBytes is the state the plugin asks for: two full outputs.
	stateBytes = 2*fullOutputCap + 1<<20
)

// kept is what a cursor refers to.
type kept struct {
	Status   string `json:"status"`
	ExitCode *int   `json:"exit_code"`
	Cwd      string `json:"cwd"`
	Rest     string `json:"rest"`
	// Cut is the note appended after the last page (the 16 MiB cap).
	Cut string `json:"cut,omitempty"`
}

var errCursor = errors.New("unknown or expired cursor: run the command again")

// keep stores k and returns the cursor of its first page ("" if it could
// not be stored: the output is then only truncated).
func keep(k kept, now time.Time) string {
	expireCursors(now)
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := cursorPrefix + strconv.FormatInt(now.Add(cursorLifetime).Unix(), 10) + "." + hex.EncodeToString(b[:])
	v, _ := json.Marshal(k)
	err := state.Set(id, string(v))
	if errors.Is(err, state.ErrTooLarge) {
		// Full: the newest output wins over older unread ones.
		dropCursors(func(string) bool { return true })
		err = state.Set(id, string(v))
	}
	if err != nil {
		return ""
	}
	return cursorOf(id, 0)
}

func cursorOf(id string, off int) string {
	return strings.TrimPrefix(id, cursorPrefix) + "." + strconv.Itoa(off)
}

// page answers the page a cursor names: its text, and the next cursor
// ("" on the last page, whose key is then deleted).
func page(cursor string, now time.Time) (k kept, part, next string, err error) {
	i := strings.LastIndexByte(cursor, '.')
	if i < 0 {
		return k, "", "", errCursor
	}
	id, offStr := cursorPrefix+cursor[:i], cursor[i+1:]
	exp, _, _ := strings.Cut(cursor[:i], ".")
	e, err1 := strconv.ParseInt(exp, 10, 64)
	off, err2 := strconv.Atoi(offStr)
	if err1 != nil || err2 != nil || off < 0 || now.Unix() > e {
		return k, "", "", errCursor
	}
	v, found, err := state.Get(id)
	if err != nil {
		return k, "", "", err
	}
	if !found || json.Unmarshal([]byte(v), &k) != nil || off > len(k.Rest) {
		return k, "", "", errCursor
	}
	part, more := cutChars(k.Rest[off:], truncateChars)
	if more {
		return k, part, cursorOf(id, off+len(part)), nil
	}
	_, _ = state.Delete(id)
	return k, part, "", nil
}

// expireCursors deletes the cursors past their lifetime.
func expireCursors(now time.Time) {
	dropCursors(func(key string) bool {
		exp, _, _ := strings.Cut(strings.TrimPrefix(key, cursorPrefix), ".")
		e, err := strconv.ParseInt(exp, 10, 64)
		return err != nil || now.Unix() > e
	})
}

// dropCursors deletes the cursors whose key drop selects.
func dropCursors(drop func(key string) bool) {
	keys, err := state.List(cursorPrefix)
	if err != nil {
		return
	}
	for _, k := range keys {
		if drop(k) {
			_, _ = state.Delete(k)
		}
	}
}
