package upstream

import (
	"context"
	"errors"
	"fmt"
)

// Withheld is one tool of a server that the pins withhold now: new (no
// pin) or changed (its pinned fields differ from the pin). Digest is the
// PinDigest of the definition the server lists now: accepting it pins
// exactly that definition.
type Withheld struct {
	Tool   string        `json:"tool"`
	Kind   string        `json:"kind"` // "new" or "changed"
	Digest string        `json:"digest"`
	Fields []FieldChange `json:"fields,omitempty"`
	// Reason is set instead of Digest when the definition cannot be
	// pinned at all (it has no name, or is not a JSON object).
	Reason string `json:"reason,omitempty"`
}

// ServerReview is what an operator reviews of one server.
type ServerReview struct {
	Status
	// Pinned says the pins are on (--pin-upstreams): only then can a
	// tool be withheld.
	Pinned   bool       `json:"pinned"`
	Withheld []Withheld `json:"withheld"`
}

// Review lists every server as Status does, with the tools the pins
// withhold from each (what `aiod upstream review` prints), from the
// upstreams' caches under the rules of Tools.
func (s *Set) Review(ctx context.Context) []ServerReview {
	st := s.Status(ctx)
	out := make([]ServerReview, len(st))
	if s.opts.Pins != nil {
		s.opts.Pins.refresh(s.logf)
	}
	for i, u := range s.ups {
		out[i] = ServerReview{Status: st[i], Pinned: s.opts.Pins != nil, Withheld: []Withheld{}}
		if s.opts.Pins == nil {
			continue
		}
		u.mu.Lock()
		tools := u.tools
		u.mu.Unlock()
		for _, t := range tools {
			out[i].Withheld = append(out[i].Withheld, s.opts.Pins.withheldOf(u.srv.Name, t)...)
		}
	}
	return out
}

// withheldOf is t as a Withheld entry, none when its pin matches.
func (p *Pins) withheldOf(server string, t upTool) []Withheld {
	_, digest, canon, err := pinOf(t.raw)
	if err != nil {
		return []Withheld{{Tool: t.name, Kind: "new", Reason: "its definition cannot be pinned: " + err.Error()}}
	}
	p.mu.Lock()
	pin, ok := p.servers[server][t.name]
	p.mu.Unlock()
	switch {
	case !ok:
		return []Withheld{{Tool: t.name, Kind: "new", Digest: digest}}
	case pin.Digest != digest:
		return []Withheld{{Tool: t.name, Kind: "changed", Digest: digest, Fields: diffFields(pin.Tool, canon)}}
	}
	return nil
}

// Errors of Accept.
var (
	// ErrNoPins: the pins are off, there is nothing to accept.
	ErrNoPins = errors.New("upstream pins are off (--pin-upstreams)")
	// ErrNotListed: the server does not list the tool now.
	ErrNotListed = errors.New("the server does not list this tool now")
	// ErrDefinitionMoved: the server lists the tool with another
	// definition than the one reviewed; nothing was pinned.
	ErrDefinitionMoved = errors.New("the tool's definition changed since it was reviewed: review it again")
)

// Accept pins one tool of server as the server lists it now, only when
// its PinDigest is digest (the definition the operator reviewed): a
// definition that moved in between is refused with ErrDefinitionMoved and
// pins nothing. The pin file is written (atomically) and the published
// list recomputed at once, so the tool is listed and callable and clients
// told (OnChange). Other tools' pins are left as they are.
func (s *Set) Accept(ctx context.Context, server, tool, digest string) error {
	p := s.opts.Pins
	if p == nil {
		return ErrNoPins
	}
	u, err := s.server(server)
	if err != nil {
		return err
	}
	p.refresh(s.logf)
	for _, t := range u.snapshot(ctx) {
		if t.name != tool {
			continue
		}
		_, d, canon, err := pinOf(t.raw)
		if err != nil {
			return fmt.Errorf("server %q: %w", server, err)
		}
		if d != digest {
			return ErrDefinitionMoved
		}
		p.mu.Lock()
		if p.servers[server] == nil {
			p.servers[server] = map[string]Pin{}
		}
		prev, had := p.servers[server][tool]
		p.servers[server][tool] = Pin{Digest: d, Tool: canon}
		p.mu.Unlock()
		if err := p.Save(); err != nil {
			p.mu.Lock()
			if had {
				p.servers[server][tool] = prev
			} else {
				delete(p.servers[server], tool)
			}
			p.mu.Unlock()
			return err
		}
		s.recheck(true)
		return nil
	}
	return fmt.Errorf("server %q, tool %q: %w", server, tool, ErrNotListed)
}
