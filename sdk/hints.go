package sdk

// Behavior states a tool's four MCP behaviour hints, each explicitly: a
// hint left out means MCP's pessimistic default (readOnlyHint false,
// destructiveHint true, idempotentHint false, openWorldHint true), so a
// declaration that names only the true ones would claim, say, an open
// world for a tool that touches only local files.
type Behavior struct {
	// ReadOnly: the tool does not modify its environment.
	ReadOnly bool
	// Destructive: the tool may delete or overwrite (meaningful only when
	// not ReadOnly).
	Destructive bool
	// Idempotent: repeating a call with the same arguments has no further
	// effect.
	Idempotent bool
	// OpenWorld: the tool reaches outside a closed set of local entities
	// (processes that may use the network, a browser).
	OpenWorld bool
}

// Annotations returns the hints as MCP annotations, all four set.
func (b Behavior) Annotations() *Annotations {
	return &Annotations{ReadOnlyHint: Bool(b.ReadOnly), DestructiveHint: Bool(b.Destructive && !b.ReadOnly),
		IdempotentHint: Bool(b.Idempotent || b.ReadOnly), OpenWorldHint: Bool(b.OpenWorld)}
}
