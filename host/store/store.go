// Package store is where aiod keeps what must outlive a call and, with
// a data directory or a shared store, a restart: the plugins' state
// spaces (the aiod:state family, spec/abi/v1/state.md) and records such
// as the tasks' (spec/protocol.md §9). One interface, three
// implementations: Memory (this package: nothing survives the process),
// store/bolt (a file under --data-dir, fsync on commit) and store/redis
// (a Redis server every replica shares, --store).
package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Space names one state space: a plugin's keys for one owner.
type Space struct{ Plugin, Owner string }

// Store keeps state spaces and records. Every method is safe for
// concurrent use; an operation on one space is atomic.
type Store interface {
	// Get returns the value of key in sp.
	Get(ctx context.Context, sp Space, key string) (string, bool, error)
	// Set stores value under key, keeping sp within limit bytes (the sum
	// of len(key)+len(value) over its entries) and the store within its
	// own bound: a *TooLargeError otherwise, nothing changed. It returns
	// the space's size after the change. When it returns nil the change
	// is as durable as the store is (on disk for bolt, in the server for
	// redis).
	Set(ctx context.Context, sp Space, key, value string, limit int64) (int64, error)
	// Delete removes key and reports whether it was there.
	Delete(ctx context.Context, sp Space, key string) (bool, error)
	// List returns up to limit keys of sp starting with prefix and
	// sorting after after, in byte order, and whether more remain.
	List(ctx context.Context, sp Space, prefix, after string, limit int) ([]string, bool, error)
	// Usage returns the size of sp.
	Usage(ctx context.Context, sp Space) (int64, error)
	// PutRecord keeps val under id for ttl (at least a second).
	PutRecord(ctx context.Context, id string, val []byte, ttl time.Duration) error
	// GetRecord returns the record id, unless it expired.
	GetRecord(ctx context.Context, id string) ([]byte, bool, error)
	// AddRecord keeps val under id for ttl only if id has no live
	// record, atomically (of several replicas adding at once, one wins),
	// and reports whether it did.
	AddRecord(ctx context.Context, id string, val []byte, ttl time.Duration) (bool, error)
	// Close releases the store (the file lock, the connections).
	Close() error
	// String names the store in messages: "memory", "bolt <path>",
	// "redis <addr>".
	String() string
}

// DefaultMaxBytes bounds all spaces of a store together unless told
// otherwise.
const DefaultMaxBytes = 256 << 20

// MaxKeyBytes is the longest key (spec/abi/v1/state.md §2).
const MaxKeyBytes = 1024

// TooLargeError is a Set refused for size: the space's limit, or, when
// Store is set, the whole store's.
type TooLargeError struct {
	Used, Limit int64 // what the space would use, and its limit
	Store       int64 // the store's bound, when that is what was hit
}

func (e *TooLargeError) Error() string {
	if e.Store > 0 {
		return fmt.Sprintf("the host's state store is full (%d bytes)", e.Store)
	}
	return fmt.Sprintf("state would use %d bytes, max %d for this plugin and owner", e.Used, e.Limit)
}

// UnavailableError is a store that could not be reached or read: the
// operation did not happen (or, for a write whose answer was lost, may
// have).
type UnavailableError struct {
	Store string // the store's String
	Err   error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("the state store (%s) is unavailable: %v", e.Store, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// ErrKey is a key that is empty or longer than MaxKeyBytes.
var ErrKey = errors.New("bad key")

// CheckKey refuses an empty key and one past MaxKeyBytes.
func CheckKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: key is required", ErrKey)
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("%w: key is %d bytes, max %d", ErrKey, len(key), MaxKeyBytes)
	}
	return nil
}

// MinRecordTTL is the shortest a record is kept.
const MinRecordTTL = time.Second
