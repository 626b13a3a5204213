// Package state is the aiod:state host function family
// (spec/abi/v1/state.md) over a store.Store: in memory, in a file under
// --data-dir, or in a shared server (--store).
package state

import (
	"context"
	"errors"
	"strings"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/store"
	"github.com/aiodhq/aiod/sdk/abi"
)

// DefaultStoreBytes bounds a Store made with no limit.
const DefaultStoreBytes = store.DefaultMaxBytes

// NewStore returns an in-memory store holding at most maxBytes across all
// spaces (DefaultStoreBytes if maxBytes <= 0): nothing is persisted.
func NewStore(maxBytes int64) *store.Memory { return store.NewMemory(maxBytes) }

func checkStateKey(key string) error {
	switch {
	case key == "":
		return hostfn.Errorf(abi.Invalid, "key is required")
	case len(key) > abi.StateMaxKeyBytes:
		return hostfn.Errorf(abi.Invalid, "key is %d bytes, max %d", len(key), abi.StateMaxKeyBytes)
	}
	return nil
}

// storeErr turns a store's error into the family's: too_large for size,
// unavailable (naming the store) when it could not be reached.
func storeErr(err error) error {
	var tl *store.TooLargeError
	var un *store.UnavailableError
	switch {
	case errors.As(err, &tl):
		return hostfn.Errorf(abi.TooLarge, "%s", tl.Error())
	case errors.As(err, &un):
		return hostfn.Errorf(abi.Unavailable, "%s", un.Error())
	case errors.Is(err, store.ErrKey):
		return hostfn.Errorf(abi.Invalid, "%s", strings.TrimPrefix(err.Error(), store.ErrKey.Error()+": "))
	}
	return hostfn.Errorf(abi.Unavailable, "the state store: %v", err)
}

// Family is the aiod:state family (spec/abi/v1/state.md): get, set,
// delete and list over the calling plugin's space for the calling owner.
type Family struct {
	s store.Store
}

// New returns the state family over s (a new in-memory store if s is
// nil).
func New(s store.Store) hostfn.Family {
	if s == nil {
		s = NewStore(0)
	}
	return &Family{s: s}
}

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

func (f *Family) get(ctx context.Context, c *hostfn.Call, req *abi.StateKeyRequest) (*abi.StateGetResponse, error) {
	if _, err := stateLimit(c); err != nil {
		return nil, err
	}
	if err := checkStateKey(req.Key); err != nil {
		return nil, err
	}
	v, ok, err := f.s.Get(ctx, store.Space{Plugin: c.Plugin, Owner: c.Owner}, req.Key)
	if err != nil {
		return nil, storeErr(err)
	}
	return &abi.StateGetResponse{Found: ok, Value: v}, nil
}

func (f *Family) set(ctx context.Context, c *hostfn.Call, req *abi.StateSetRequest) (*abi.StateSetResponse, error) {
	limit, err := stateLimit(c)
	if err != nil {
		return nil, err
	}
	if err := checkStateKey(req.Key); err != nil {
		return nil, err
	}
	used, err := f.s.Set(ctx, store.Space{Plugin: c.Plugin, Owner: c.Owner}, req.Key, req.Value, limit)
	if err != nil {
		return nil, storeErr(err)
	}
	return &abi.StateSetResponse{BytesUsed: used, MaxBytes: limit}, nil
}

func (f *Family) delete(ctx context.Context, c *hostfn.Call, req *abi.StateKeyRequest) (*abi.StateDeleteResponse, error) {
	if _, err := stateLimit(c); err != nil {
		return nil, err
	}
	if err := checkStateKey(req.Key); err != nil {
		return nil, err
	}
	ok, err := f.s.Delete(ctx, store.Space{Plugin: c.Plugin, Owner: c.Owner}, req.Key)
	if err != nil {
		return nil, storeErr(err)
	}
	return &abi.StateDeleteResponse{Deleted: ok}, nil
}

func (f *Family) list(ctx context.Context, c *hostfn.Call, req *abi.StateListRequest) (*abi.StateListResponse, error) {
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
	keys, more, err := f.s.List(ctx, store.Space{Plugin: c.Plugin, Owner: c.Owner}, req.Prefix, req.After, limit)
	if err != nil {
		return nil, storeErr(err)
	}
	if keys == nil {
		keys = []string{}
	}
	return &abi.StateListResponse{Keys: keys, Truncated: more}, nil
}
