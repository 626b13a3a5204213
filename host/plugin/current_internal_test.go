package plugin

import (
	"context"
	"errors"
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
)

// TestInvokeCurrentRetriesAfterSwap: a reload that swaps the catalogue and
// retires the plugin between the lookup and invoke sends the call to the
// new catalogue, for every operation; without a swap a closed plugin is
// not retried.
func TestInvokeCurrentRetriesAfterSwap(t *testing.T) {
	for _, op := range []uint64{abi.OpToolCall, abi.OpPromptGet, abi.OpResourceRead, abi.OpComplete} {
		r := &Registry{}
		first := &Catalog{}
		second := &Catalog{}
		r.cat.Store(first)
		retired := &Plugin{}
		retired.closed.Store(true)
		errSecond := errors.New("looked up in the new catalogue")
		var seen []*Catalog
		_, err := r.invokeCurrent(context.Background(), op, func(cat *Catalog) (*Plugin, CallRequest, error) {
			seen = append(seen, cat)
			if cat == first {
				r.cat.Store(second) // the swap, after the lookup
				return retired, CallRequest{}, nil
			}
			return nil, CallRequest{}, errSecond
		})
		if err != errSecond || len(seen) != 2 || seen[1] != second {
			t.Errorf("op %d: err %v after %d lookups, want the new catalogue's answer", op, err, len(seen))
		}
		// no swap: the closed plugin's answer stands
		n := 0
		_, err = r.invokeCurrent(context.Background(), op, func(*Catalog) (*Plugin, CallRequest, error) {
			n++
			return retired, CallRequest{}, nil
		})
		if err != ErrUnknownTool || n != 1 {
			t.Errorf("op %d without a swap: err %v after %d lookups", op, err, n)
		}
	}
}
