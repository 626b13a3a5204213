// Package state is the aiod:state host function family
// (spec/abi/v1/state.md) and its in-memory store.
package state

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/sdk/abi"
)

// State limits.
const (
	// DefaultStoreBytes bounds a Store made with no limit.
	DefaultStoreBytes = 256 << 20
)

// Store is small key-value state kept by the host in memory, one
// space per (plugin, owner): a plugin sees only its own keys, and only
// those of the owner it is called for. A space holds at most its grant's
// StateMaxBytes (keys plus values); the store as a whole at most its
// limit. Nothing is persisted. It is safe for concurrent use.
type Store struct {
	max int64

	mu     sync.Mutex
	total  int64
	spaces map[stateKey]*stateSpace
}

type stateKey struct{ plugin, owner string }

type stateSpace struct {
	kv    map[string]string
	bytes int64
}

// NewStore returns a store holding at most maxBytes across all
// spaces (DefaultStoreBytes if maxBytes <= 0).
func NewStore(maxBytes int64) *Store {
	if maxBytes <= 0 {
		maxBytes = DefaultStoreBytes
	}
	return &Store{max: maxBytes, spaces: map[stateKey]*stateSpace{}}
}

// Get returns the value of key in the space of (plugin, owner).
func (s *Store) Get(plugin, owner, key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.spaces[stateKey{plugin, owner}]
	if sp == nil {
		return "", false
	}
	v, ok := sp.kv[key]
	return v, ok
}

// Set stores value under key, keeping the space within limit bytes
// (len(key)+len(value) summed over its entries). It returns the space's
// size after the change.
func (s *Store) Set(plugin, owner, key, value string, limit int64) (int64, error) {
	if err := checkStateKey(key); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := stateKey{plugin, owner}
	sp := s.spaces[k]
	if sp == nil {
		sp = &stateSpace{kv: map[string]string{}}
	}
	delta := int64(len(key) + len(value))
	if old, ok := sp.kv[key]; ok {
		delta -= int64(len(key) + len(old))
	}
	if sp.bytes+delta > limit {
		return sp.bytes, hostfn.Errorf(abi.TooLarge, "state would use %d bytes, max %d for this plugin and owner", sp.bytes+delta, limit)
	}
	if s.total+delta > s.max {
		return sp.bytes, hostfn.Errorf(abi.TooLarge, "the host's state store is full (%d bytes)", s.max)
	}
	sp.kv[key] = value
	sp.bytes += delta
	s.total += delta
	s.spaces[k] = sp
	return sp.bytes, nil
}

// Delete removes key and reports whether it was there.
func (s *Store) Delete(plugin, owner, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := stateKey{plugin, owner}
	sp := s.spaces[k]
	if sp == nil {
		return false
	}
	old, ok := sp.kv[key]
	if !ok {
		return false
	}
	delete(sp.kv, key)
	n := int64(len(key) + len(old))
	sp.bytes -= n
	s.total -= n
	if len(sp.kv) == 0 {
		delete(s.spaces, k)
	}
	return true
}

// List returns up to limit keys starting with prefix and sorting after
// after, in order, and whether more remain.
func (s *Store) List(plugin, owner, prefix, after string, limit int) ([]string, bool) {
	s.mu.Lock()
	var keys []string
	if sp := s.spaces[stateKey{plugin, owner}]; sp != nil {
		for k := range sp.kv {
			if strings.HasPrefix(k, prefix) && k > after {
				keys = append(keys, k)
			}
		}
	}
	s.mu.Unlock()
	sort.Strings(keys)
	if len(keys) > limit {
		return keys[:limit], true
	}
	return keys, false
}

// Usage returns the size of the space of (plugin, owner).
func (s *Store) Usage(plugin, owner string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp := s.spaces[stateKey{plugin, owner}]; sp != nil {
		return sp.bytes
	}
	return 0
}

// Drop forgets the space of (plugin, owner), e.g. when the owner's session
// ends.
func (s *Store) Drop(plugin, owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := stateKey{plugin, owner}
	if sp := s.spaces[k]; sp != nil {
		s.total -= sp.bytes
		delete(s.spaces, k)
	}
}

func checkStateKey(key string) error {
	switch {
	case key == "":
		return hostfn.Errorf(abi.Invalid, "key is required")
	case len(key) > abi.StateMaxKeyBytes:
		return hostfn.Errorf(abi.Invalid, "key is %d bytes, max %d", len(key), abi.StateMaxKeyBytes)
	}
	return nil
}

// Family is the aiod:state family (spec/abi/v1/state.md): get, set,
// delete and list over the calling plugin's space for the calling owner.
type Family struct {
	s *Store
}

// New returns the state family over s.
func New(s *Store) hostfn.Family { return &Family{s: s} }

// Name is abi.FamilyState.
func (*Family) Name() abi.Family { return abi.FamilyState }

// Defs are the functions of aiod:state.
func (f *Family) Defs() []hostfn.Def {
	return []hostfn.Def{
		hostfn.ReqResp(abi.ModuleState, "get", hostfn.StrictJSON(f.get)),
		hostfn.ReqResp(abi.ModuleState, "set", hostfn.StrictJSON(f.set)),
		hostfn.ReqResp(abi.ModuleState, "delete", hostfn.StrictJSON(f.delete)),
		hostfn.ReqResp(abi.ModuleState, "list", hostfn.StrictJSON(f.list)),
	}
}

func stateLimit(c *hostfn.Call) (int64, error) {
	if c.Grant == nil || !c.Grant.Has(abi.FamilyState) {
		return 0, hostfn.Errorf(abi.Denied, "the plugin has no state grant")
	}
	if c.Grant.StateMaxBytes > 0 {
		return c.Grant.StateMaxBytes, nil
	}
	return abi.StateDefaultMaxBytes, nil
}

func (f *Family) get(_ context.Context, c *hostfn.Call, req *abi.StateKeyRequest) (*abi.StateGetResponse, error) {
	if _, err := stateLimit(c); err != nil {
		return nil, err
	}
	if err := checkStateKey(req.Key); err != nil {
		return nil, err
	}
	v, ok := f.s.Get(c.Plugin, c.Owner, req.Key)
	return &abi.StateGetResponse{Found: ok, Value: v}, nil
}

func (f *Family) set(_ context.Context, c *hostfn.Call, req *abi.StateSetRequest) (*abi.StateSetResponse, error) {
	limit, err := stateLimit(c)
	if err != nil {
		return nil, err
	}
	used, err := f.s.Set(c.Plugin, c.Owner, req.Key, req.Value, limit)
	if err != nil {
		return nil, err
	}
	return &abi.StateSetResponse{BytesUsed: used, MaxBytes: limit}, nil
}

func (f *Family) delete(_ context.Context, c *hostfn.Call, req *abi.StateKeyRequest) (*abi.StateDeleteResponse, error) {
	if _, err := stateLimit(c); err != nil {
		return nil, err
	}
	if err := checkStateKey(req.Key); err != nil {
		return nil, err
	}
	return &abi.StateDeleteResponse{Deleted: f.s.Delete(c.Plugin, c.Owner, req.Key)}, nil
}

func (f *Family) list(_ context.Context, c *hostfn.Call, req *abi.StateListRequest) (*abi.StateListResponse, error) {
	if _, err := stateLimit(c); err != nil {
		return nil, err
	}
	limit := req.Limit
	switch {
	case limit < 0 || limit > abi.StateMaxList:
		return nil, hostfn.Errorf(abi.Invalid, "limit must be between 1 and %d", abi.StateMaxList)
	case limit == 0:
		limit = abi.StateDefaultList
	}
	keys, more := f.s.List(c.Plugin, c.Owner, req.Prefix, req.After, limit)
	if keys == nil {
		keys = []string{}
	}
	return &abi.StateListResponse{Keys: keys, Truncated: more}, nil
}
