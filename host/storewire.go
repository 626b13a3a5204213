package host

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/store"
	"github.com/aiodhq/aiod/host/store/bolt"
	"github.com/aiodhq/aiod/host/store/redis"
	"github.com/aiodhq/aiod/host/tenant"
)

// openStore opens where plugin state and task records live: the shared
// server of --store, else the file under --data-dir, else memory (nothing
// outlives the process).
func openStore(ctx context.Context, url, dataDir string) (store.Store, error) {
	switch {
	case url != "":
		return redis.Open(ctx, url, 0)
	case dataDir != "":
		return bolt.Open(dataDir, 0)
	}
	return store.NewMemory(0), nil
}

// provisionStore opens the store (openStore) and closes it last.
func (h *Host) provisionStore(ctx context.Context, c Config) (err error) {
	if h.store, err = openStore(ctx, c.Store, c.DataDir); err != nil {
		return err
	}
	h.built(func(context.Context) error { return h.store.Close() })
	h.log.Info("state store", "store", h.store.String(), "durable", h.store.String() != "memory")
	if b, ok := h.store.(tenant.SharedBuckets); ok && h.tenancy.set != nil {
		var last atomic.Int64
		h.tenancy.set.Share(b, func(err error) {
			// at most one line every 10 s while the store is away
			if now := time.Now().UnixNano(); now-last.Load() > int64(10*time.Second) {
				last.Store(now)
				h.log.Warn("calls_per_minute: the shared bucket cannot be reached, this replica's own bucket admits meanwhile", "err", err)
			}
		})
	}
	return nil
}

// withTaskRecords keeps the tasks' records in the store when it outlives
// the process (a file or a shared server): tasks/get then reads a task of
// another replica or of an earlier process.
func (h *Host) withTaskRecords(o mcp.TaskOptions) mcp.TaskOptions {
	if _, mem := h.store.(*store.Memory); !mem {
		o.Records = h.store
	}
	return o
}
