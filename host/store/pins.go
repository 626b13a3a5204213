package store

import "context"

// pinSpace holds the upstream pins (host/upstream): a space no plugin has
// (a plugin's name has no ':').
var pinSpace = Space{Plugin: "aiod:upstream-pins"}

// MaxPinBytes bounds the pins kept in a store.
const MaxPinBytes = 16 << 20

// Pins keeps the upstream pins in St (upstream.PinStore): with --store,
// every replica reads and accepts the same pins.
type Pins struct{ St Store }

// GetPins returns the pins' JSON, if any.
func (p Pins) GetPins(ctx context.Context) ([]byte, bool, error) {
	v, ok, err := p.St.Get(ctx, pinSpace, "pins")
	return []byte(v), ok, err
}

// PutPins replaces the pins' JSON, durably as the store is.
func (p Pins) PutPins(ctx context.Context, b []byte) error {
	_, err := p.St.Set(ctx, pinSpace, "pins", string(b), MaxPinBytes)
	return err
}

func (p Pins) String() string { return p.St.String() }
