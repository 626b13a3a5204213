// Package keyring keeps the MRTR requestState keys (spec/protocol.md §4.1,
// §9) in the store, for a host started without --state-key-file: every
// replica sharing a store (--store) seals and opens with the same keys,
// and with --data-dir a requestState outlives a restart.
//
// There is one key per epoch (a UTC day), a random one added to the store
// by whichever replica comes first (Store.AddRecord: of replicas adding at
// once, one wins and all read its key). A replica seals with the current
// epoch's key and opens with it, the previous epoch's (a state sealed just
// before midnight) and the next one's, which every replica adds and reads
// a day ahead: when a replica's clock reaches the next epoch and seals with
// its key, every other replica already opens it (the add-then-promote
// rotation of a key file, without an operator).
package keyring

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aiodhq/aiod/host/store"
)

// Epoch is how long one key seals.
const Epoch = 24 * time.Hour

// KeyBytes is a key's length.
const KeyBytes = 32

// Refresh is how often Keep reads the ring again.
const Refresh = time.Minute

func recordID(epoch int64) string { return "mrtr-key/" + strconv.FormatInt(epoch, 10) }

// epochOf is the epoch of t.
func epochOf(t time.Time) int64 { return t.UnixMilli() / Epoch.Milliseconds() }

// Keys returns the ring at now, the sealing key first: the current
// epoch's, then the next one's and the previous one's. Missing keys of the
// current and next epochs are added (random); a missing previous one is
// left out. Every key is kept three epochs.
func Keys(ctx context.Context, st store.Store, now time.Time) ([][]byte, error) {
	e := epochOf(now)
	var keys [][]byte
	for _, ep := range []int64{e, e + 1, e - 1} {
		k, err := key(ctx, st, ep, ep != e-1)
		if err != nil {
			return nil, err
		}
		if k != nil {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// key reads epoch ep's key, adding a random one first when add is set.
func key(ctx context.Context, st store.Store, ep int64, add bool) ([]byte, error) {
	id := recordID(ep)
	if add {
		k := make([]byte, KeyBytes)
		if _, err := rand.Read(k); err != nil {
			return nil, err
		}
		if _, err := st.AddRecord(ctx, id, k, 3*Epoch); err != nil {
			return nil, fmt.Errorf("the MRTR key ring: %w", err)
		}
	}
	b, ok, err := st.GetRecord(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("the MRTR key ring: %w", err)
	}
	switch {
	case !ok && add:
		return nil, errors.New("the MRTR key ring: the key added to " + st.String() + " is not there")
	case !ok:
		return nil, nil
	case len(b) != KeyBytes:
		return nil, fmt.Errorf("the MRTR key ring in %s: the key of epoch %d has %d bytes, want %d", st.String(), ep, len(b), KeyBytes)
	}
	return b, nil
}

// Keep reads the ring every period (Refresh in aiod) until ctx ends,
// giving each read to set; a read that fails is given to fail, and the
// keys set last keep applying. The first read is Keys's, by the caller.
func Keep(ctx context.Context, st store.Store, every time.Duration, set func([][]byte) error, fail func(error)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		keys, err := Keys(rctx, st, time.Now())
		cancel()
		if err == nil {
			err = set(keys)
		}
		if err != nil && ctx.Err() == nil {
			fail(err)
		}
	}
}
