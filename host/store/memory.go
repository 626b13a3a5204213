package store

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"
)

// Memory is a Store in the process's memory: nothing survives it. It is
// what aiod uses without --data-dir and --store.
type Memory struct {
	max int64

	mu      sync.Mutex
	total   int64
	spaces  map[Space]*memSpace
	records map[string]memRecord
}

type memSpace struct {
	kv    map[string]string
	bytes int64
}

type memRecord struct {
	val     []byte
	expires time.Time
}

// NewMemory returns a store holding at most maxBytes across all spaces
// (DefaultMaxBytes if maxBytes <= 0).
func NewMemory(maxBytes int64) *Memory {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return &Memory{max: maxBytes, spaces: map[Space]*memSpace{}, records: map[string]memRecord{}}
}

func (*Memory) String() string { return "memory" }

// Close does nothing.
func (*Memory) Close() error { return nil }

func (m *Memory) Get(_ context.Context, sp Space, key string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.spaces[sp]
	if s == nil {
		return "", false, nil
	}
	v, ok := s.kv[key]
	return v, ok, nil
}

func (m *Memory) Set(_ context.Context, sp Space, key, value string, limit int64) (int64, error) {
	if err := CheckKey(key); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.spaces[sp]
	if s == nil {
		s = &memSpace{kv: map[string]string{}}
	}
	delta := int64(len(key) + len(value))
	if old, ok := s.kv[key]; ok {
		delta -= int64(len(key) + len(old))
	}
	if s.bytes+delta > limit {
		return s.bytes, &TooLargeError{Used: s.bytes + delta, Limit: limit}
	}
	if m.total+delta > m.max {
		return s.bytes, &TooLargeError{Used: s.bytes + delta, Limit: limit, Store: m.max}
	}
	s.kv[key] = value
	s.bytes += delta
	m.total += delta
	m.spaces[sp] = s
	return s.bytes, nil
}

func (m *Memory) Delete(_ context.Context, sp Space, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.spaces[sp]
	if s == nil {
		return false, nil
	}
	old, ok := s.kv[key]
	if !ok {
		return false, nil
	}
	delete(s.kv, key)
	n := int64(len(key) + len(old))
	s.bytes -= n
	m.total -= n
	if len(s.kv) == 0 {
		delete(m.spaces, sp)
	}
	return true, nil
}

func (m *Memory) List(_ context.Context, sp Space, prefix, after string, limit int) ([]string, bool, error) {
	m.mu.Lock()
	var keys []string
	if s := m.spaces[sp]; s != nil {
		for k := range s.kv {
			if strings.HasPrefix(k, prefix) && k > after {
				keys = append(keys, k)
			}
		}
	}
	m.mu.Unlock()
	sort.Strings(keys)
	if len(keys) > limit {
		return keys[:limit], true, nil
	}
	return keys, false, nil
}

func (m *Memory) Usage(_ context.Context, sp Space) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.spaces[sp]; s != nil {
		return s.bytes, nil
	}
	return 0, nil
}

func (m *Memory) PutRecord(_ context.Context, id string, val []byte, ttl time.Duration) error {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, r := range m.records { // expired records go as new ones come
		if now.After(r.expires) {
			delete(m.records, k)
		}
	}
	m.records[id] = memRecord{val: append([]byte(nil), val...), expires: now.Add(max(ttl, MinRecordTTL))}
	return nil
}

func (m *Memory) GetRecord(_ context.Context, id string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[id]
	if !ok || time.Now().After(r.expires) {
		return nil, false, nil
	}
	return append([]byte(nil), r.val...), true, nil
}

func (m *Memory) AddRecord(_ context.Context, id string, val []byte, ttl time.Duration) (bool, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.records[id]; ok && !now.After(r.expires) {
		return false, nil
	}
	m.records[id] = memRecord{val: append([]byte(nil), val...), expires: now.Add(max(ttl, MinRecordTTL))}
	return true, nil
}
