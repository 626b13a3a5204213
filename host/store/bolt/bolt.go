// Package bolt is the store.Store in one file on the local disk
// (<data-dir>/state.db), an embedded bbolt database: every change is one
// transaction, written and fsynced before it is acknowledged, so a crash
// or a power cut loses nothing that was acknowledged and never leaves
// half a change.
package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/store"
	bbolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
)

// FileName is the store's file in the data directory.
const FileName = "state.db"

// Buckets: state holds one sub-bucket per space (named by spaceName),
// usage the size of each space (8 bytes, big endian), meta the size of
// all spaces (kTotal), records the records (8 bytes of expiry in Unix
// ms, then the value).
var (
	bState   = []byte("state")
	bUsage   = []byte("usage")
	bMeta    = []byte("meta")
	bRecords = []byte("records")
	kTotal   = []byte("total")
)

// BatchDelay is the longest a write waits for others to share its
// transaction and fsync.
const BatchDelay = 2 * time.Millisecond

// LockTimeout is how long Open waits for another process's lock on the
// file before it gives up.
const LockTimeout = 2 * time.Second

// Store is the bbolt store.
//
// Concurrent writes go through bbolt's Batch: they share one transaction
// and one fsync, and none is answered before it is on disk (write). Every check
// (a space's size, the store's) reads the transaction, so it holds
// within a batch too.
type Store struct {
	db   *bbolt.DB
	path string
	max  int64
	puts atomic.Int64
	// writing counts the writes in flight: a lone one commits at once,
	// the others share a batch (write)
	writing atomic.Int64
}

// write runs fn in a write transaction: its own when no other write is in
// flight (no wait), else in a batch with the others (one commit, one
// fsync for all). fn may run more than once (a batch is retried without a
// member that failed), so it recomputes everything from the transaction.
func (s *Store) write(fn func(*bbolt.Tx) error) error {
	defer s.writing.Add(-1)
	if s.writing.Add(1) == 1 {
		return s.db.Update(fn)
	}
	return s.db.Batch(fn)
}

var _ store.Store = (*Store)(nil)

// Open opens (creating it if need be) the store in dir, holding at most
// maxBytes of state (store.DefaultMaxBytes if <= 0). A file another
// process holds, or one that is not a sound bbolt database, is an error
// that says so.
func Open(dir string, maxBytes int64) (*Store, error) {
	if maxBytes <= 0 {
		maxBytes = store.DefaultMaxBytes
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state store: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := open(path)
	var perr *fs.PathError
	switch {
	case err == nil:
	case errors.Is(err, bberrors.ErrTimeout):
		return nil, fmt.Errorf("state store %s is locked by another process (another aiod with the same --data-dir?)", path)
	case errors.As(err, &perr):
		return nil, fmt.Errorf("state store %s: %w", path, err)
	default: // not a database, a version of another bbolt, a checksum or a size that is wrong
		return nil, fmt.Errorf("state store %s is damaged (%v): move it aside to start with an empty store", path, err)
	}
	// concurrent writes wait at most this long for each other to share a
	// commit (bbolt's default, 10 ms, is a long wait for a lone set)
	db.MaxBatchDelay = BatchDelay
	s := &Store{db: db, path: path, max: maxBytes}
	if err := s.init(); err != nil {
		db.Close()
		return nil, fmt.Errorf("state store %s is damaged (%v): move it aside to start with an empty store", path, err)
	}
	return s, nil
}

// open is bbolt.Open, whose panics on a damaged file (a bad freelist
// page) are errors.
func open(path string) (db *bbolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w: %v", bberrors.ErrInvalid, r)
		}
	}()
	return bbolt.Open(path, 0o600, &bbolt.Options{Timeout: LockTimeout})
}

// init makes the buckets, checks the file's consistency and adds up the
// spaces' sizes. A damaged page can make bbolt panic: that is an error
// here, not a crash.
func (s *Store) init() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return s.db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bState, bUsage, bMeta, bRecords} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		var cerr error
		for e := range tx.Check() { // drain: Check's goroutine sends them all
			if cerr == nil {
				cerr = e
			}
		}
		if cerr != nil {
			return cerr
		}
		var total int64
		err := tx.Bucket(bUsage).ForEach(func(_, v []byte) error {
			if len(v) != 8 {
				return errors.New("a space's size is not 8 bytes")
			}
			total += int64(binary.BigEndian.Uint64(v))
			return nil
		})
		if err != nil {
			return err
		}
		if err := putInt(tx.Bucket(bMeta), kTotal, total); err != nil {
			return err
		}
		// records past their expiry go now
		now := time.Now().UnixMilli()
		rb := tx.Bucket(bRecords)
		c := rb.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(v) < 8 || int64(binary.BigEndian.Uint64(v)) < now {
				if err := c.Delete(); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (s *Store) String() string { return "bolt " + s.path }

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Close closes the file (and releases its lock).
func (s *Store) Close() error { return s.db.Close() }

// spaceName is a space's sub-bucket: the plugin's name, NUL, the owner
// (a plugin name has no NUL: manifest names are [a-z0-9-]).
func spaceName(sp store.Space) []byte {
	return []byte(sp.Plugin + "\x00" + sp.Owner)
}

func (s *Store) Get(_ context.Context, sp store.Space, key string) (v string, ok bool, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bState).Bucket(spaceName(sp))
		if b == nil {
			return nil
		}
		if raw := b.Get([]byte(key)); raw != nil {
			v, ok = string(raw), true
		}
		return nil
	})
	return v, ok, s.wrap(err)
}

func (s *Store) wrap(err error) error {
	if err == nil {
		return nil
	}
	var tl *store.TooLargeError
	if errors.As(err, &tl) || errors.Is(err, store.ErrKey) {
		return err
	}
	return &store.UnavailableError{Store: s.String(), Err: err}
}

func getInt(b *bbolt.Bucket, k []byte) int64 {
	if v := b.Get(k); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func putInt(b *bbolt.Bucket, k []byte, n int64) error {
	if n <= 0 {
		return b.Delete(k)
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(n))
	return b.Put(k, v[:])
}

func usageOf(tx *bbolt.Tx, name []byte) int64 { return getInt(tx.Bucket(bUsage), name) }

func putUsage(tx *bbolt.Tx, name []byte, n int64) error { return putInt(tx.Bucket(bUsage), name, n) }

// addTotal adds delta to the size of all spaces.
func addTotal(tx *bbolt.Tx, delta int64) error {
	m := tx.Bucket(bMeta)
	return putInt(m, kTotal, getInt(m, kTotal)+delta)
}

func (s *Store) Set(_ context.Context, sp store.Space, key, value string, limit int64) (int64, error) {
	if err := store.CheckKey(key); err != nil {
		return 0, err
	}
	name := spaceName(sp)
	var used, delta int64
	err := s.write(func(tx *bbolt.Tx) error {
		used = usageOf(tx, name)
		b := tx.Bucket(bState).Bucket(name)
		delta = int64(len(key) + len(value))
		if b != nil {
			if old := b.Get([]byte(key)); old != nil {
				delta -= int64(len(key) + len(old))
			}
		}
		if used+delta > limit {
			return &store.TooLargeError{Used: used + delta, Limit: limit}
		}
		if getInt(tx.Bucket(bMeta), kTotal)+delta > s.max {
			return &store.TooLargeError{Used: used + delta, Limit: limit, Store: s.max}
		}
		if b == nil {
			var err error
			if b, err = tx.Bucket(bState).CreateBucket(name); err != nil {
				return err
			}
		}
		if err := b.Put([]byte(key), []byte(value)); err != nil {
			return err
		}
		if err := putUsage(tx, name, used+delta); err != nil {
			return err
		}
		used += delta
		return addTotal(tx, delta)
	})
	if err != nil {
		var tl *store.TooLargeError
		if errors.As(err, &tl) {
			return used, err
		}
		return 0, s.wrap(err)
	}
	return used, nil
}

func (s *Store) Delete(_ context.Context, sp store.Space, key string) (bool, error) {
	name := spaceName(sp)
	var n int64
	err := s.write(func(tx *bbolt.Tx) error {
		n = 0
		b := tx.Bucket(bState).Bucket(name)
		if b == nil {
			return nil
		}
		old := b.Get([]byte(key))
		if old == nil {
			return nil
		}
		n = int64(len(key) + len(old))
		if err := b.Delete([]byte(key)); err != nil {
			return err
		}
		used := usageOf(tx, name) - n
		if used <= 0 {
			if err := tx.Bucket(bState).DeleteBucket(name); err != nil {
				return err
			}
			used = 0
		}
		if err := putUsage(tx, name, used); err != nil {
			return err
		}
		return addTotal(tx, -n)
	})
	if err != nil {
		return false, s.wrap(err)
	}
	return n > 0, nil
}

func (s *Store) List(_ context.Context, sp store.Space, prefix, after string, limit int) ([]string, bool, error) {
	var keys []string
	more := false
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bState).Bucket(spaceName(sp))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		start := prefix
		if after >= prefix {
			start = after
		}
		k, _ := c.Seek([]byte(start))
		for ; k != nil; k, _ = c.Next() {
			ks := string(k)
			if ks <= after {
				continue
			}
			if !strings.HasPrefix(ks, prefix) {
				if ks > prefix {
					break
				}
				continue
			}
			if len(keys) == limit {
				more = true
				break
			}
			keys = append(keys, ks)
		}
		return nil
	})
	return keys, more, s.wrap(err)
}

func (s *Store) Usage(_ context.Context, sp store.Space) (n int64, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		n = usageOf(tx, spaceName(sp))
		return nil
	})
	return n, s.wrap(err)
}

func (s *Store) PutRecord(_ context.Context, id string, val []byte, ttl time.Duration) error {
	ttl = max(ttl, store.MinRecordTTL)
	buf := make([]byte, 8+len(val))
	binary.BigEndian.PutUint64(buf, uint64(time.Now().Add(ttl).UnixMilli()))
	copy(buf[8:], val)
	sweep := s.puts.Add(1)%256 == 0
	return s.wrap(s.write(func(tx *bbolt.Tx) error {
		rb := tx.Bucket(bRecords)
		if sweep { // expired records go now and then, as new ones come
			now := time.Now().UnixMilli()
			c := rb.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if len(v) < 8 || int64(binary.BigEndian.Uint64(v)) < now {
					if err := c.Delete(); err != nil {
						return err
					}
				}
			}
		}
		return rb.Put([]byte(id), buf)
	}))
}

func (s *Store) GetRecord(_ context.Context, id string) (val []byte, ok bool, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bRecords).Get([]byte(id))
		if len(v) < 8 || int64(binary.BigEndian.Uint64(v)) < time.Now().UnixMilli() {
			return nil
		}
		val, ok = append([]byte(nil), v[8:]...), true
		return nil
	})
	return val, ok, s.wrap(err)
}

func (s *Store) AddRecord(_ context.Context, id string, val []byte, ttl time.Duration) (added bool, err error) {
	ttl = max(ttl, store.MinRecordTTL)
	buf := make([]byte, 8+len(val))
	binary.BigEndian.PutUint64(buf, uint64(time.Now().Add(ttl).UnixMilli()))
	copy(buf[8:], val)
	err = s.write(func(tx *bbolt.Tx) error {
		rb := tx.Bucket(bRecords)
		if v := rb.Get([]byte(id)); len(v) >= 8 && int64(binary.BigEndian.Uint64(v)) >= time.Now().UnixMilli() {
			added = false
			return nil
		}
		added = true
		return rb.Put([]byte(id), buf)
	})
	return added, s.wrap(err)
}
