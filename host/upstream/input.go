//lint:file-ignore SA1019 sampling is deprecated in 2026-07-28 but live in the eras aiod relays

package upstream

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Input requests through the aggregation. An upstream asks for input while a
// call is under way: a 2026-07-28 upstream answers the call input_required
// (the go-sdk client's multi-round-trip loop hands each input request to the
// handlers below and sends the call again with the answers and the
// upstream's requestState, which never leaves aiod); an earlier one sends
// elicitation/create or sampling/createMessage requests of its own. Either
// way the question goes to the Asker of the call that is under way (aiod's
// own client, in its era: host/mcp), and its answer back to the upstream.

// Asker relays one input request (method elicitation/create or
// sampling/createMessage, params as JSON) to the client of the request that
// is under way and returns its answer (an ElicitResult or a
// CreateMessageResult). key is stable across runs of the same request (a
// digest of the upstream, the method and the params, and which asking of
// them it is), so that a 2026-07-28 client answering in a later round finds
// its answer under it. An error ends the call: the Set returns it as is.
type Asker func(ctx context.Context, key, method string, params json.RawMessage) (json.RawMessage, error)

// maxAsks bounds the input requests of one request to a server: a
// 2026-07-28 client's later rounds run it again from the start, so the
// questions of all its rounds count.
const maxAsks = 5

// metaAsk is the _meta key the guard sets on an input request that arrives
// on a call's own stream: the id of that call's ask (never sent anywhere:
// it lives between the guard and the handlers).
const metaAsk = "aiod/ask"

// ask is one call under way that may be asked for input.
type ask struct {
	id     string // random: a server cannot name another call's
	in     Asker
	ctx    context.Context
	cancel context.CancelFunc

	mu   sync.Mutex
	err  error          // the first failure to relay: the call's outcome
	seen map[string]int // digest -> times asked
	n    int
}

type askKey struct{}

// asking registers a request under way on u; done unregisters it. Without
// an Asker nothing is registered: an upstream's question during it is
// declined (no one can answer it).
func (u *upstream) asking(ctx context.Context, in Asker) (context.Context, func()) {
	if in == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var rnd [16]byte
	_, _ = rand.Read(rnd[:])
	a := &ask{id: hex.EncodeToString(rnd[:]), in: in, ctx: ctx, cancel: cancel, seen: map[string]int{}}
	ctx = context.WithValue(ctx, askKey{}, a)
	u.askMu.Lock()
	if u.asks == nil {
		u.asks = map[*ask]bool{}
	}
	u.asks[a] = true
	u.askMu.Unlock()
	return ctx, func() {
		u.askMu.Lock()
		delete(u.asks, a)
		u.askMu.Unlock()
		cancel()
	}
}

// inputError is the failure to relay an input request of the request under
// way in ctx (nil: none).
func inputError(ctx context.Context) error {
	a, _ := ctx.Value(askKey{}).(*ask)
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// ErrNoAsker is the outcome of an upstream's input request that no call
// under way can take: none is, or (for an upstream of an earlier protocol,
// whose requests carry no link to the call) more than one is.
var ErrNoAsker = errors.New("no request under way can answer it")

// asker finds the call an input request belongs to: the one whose stream
// it came on (the guard named it in the request's _meta: Streamable HTTP),
// else the one whose context it runs in (a 2026-07-28 upstream's
// input_required, fulfilled by the go-sdk within the call), else, for a
// command or 2024-11-05 server whose requests share one stream, the only
// one under way on u. A request on Streamable HTTP outside a call's stream
// names no call and is refused.
func (u *upstream) asker(ctx context.Context, id string) (*ask, error) {
	if id != "" {
		u.askMu.Lock()
		defer u.askMu.Unlock()
		for a := range u.asks {
			if a.id == id {
				return a, nil
			}
		}
		return nil, fmt.Errorf("%w: the request it came with is over (upstream MCP server %q)", ErrNoAsker, u.srv.Name)
	}
	if a, _ := ctx.Value(askKey{}).(*ask); a != nil {
		return a, nil
	}
	if u.stdio == nil && !u.sse.Load() {
		return nil, fmt.Errorf("%w: upstream MCP server %q sent it outside the stream of a request whose client can be asked", ErrNoAsker, u.srv.Name)
	}
	u.askMu.Lock()
	defer u.askMu.Unlock()
	if len(u.asks) != 1 {
		if len(u.asks) > 1 {
			return nil, fmt.Errorf("%w: %d requests to upstream MCP server %q are under way, and its request does not say which one asks", ErrNoAsker, len(u.asks), u.srv.Name)
		}
		return nil, fmt.Errorf("%w (upstream MCP server %q)", ErrNoAsker, u.srv.Name)
	}
	for a := range u.asks {
		return a, nil
	}
	return nil, ErrNoAsker
}

// relay hands one input request to the call's Asker. A failure of the
// client (it cannot answer, it is asked in a later round) is kept as the
// call's outcome and ends the upstream request at once.
func (u *upstream) relay(ctx context.Context, method string, params any, id string) (json.RawMessage, error) {
	a, err := u.asker(ctx, id)
	if err != nil {
		u.set.logf("upstream MCP server %q sent %s: declined: %v", u.srv.Name, method, err)
		return nil, err
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(u.srv.Name + "\x00" + method + "\x00" + string(raw)))
	d := hex.EncodeToString(sum[:8])
	a.mu.Lock()
	if a.err != nil {
		err := a.err
		a.mu.Unlock()
		return nil, err
	}
	a.n++
	if a.n > maxAsks {
		a.err = fmt.Errorf("upstream MCP server %q asked for input more than %d times in one request", u.srv.Name, maxAsks)
		err := a.err
		a.mu.Unlock()
		a.cancel()
		return nil, err
	}
	a.seen[d]++
	key := "upstream-" + d + "-" + strconv.Itoa(a.seen[d])
	a.mu.Unlock()
	ans, err := a.in(a.ctx, key, method, raw)
	if err != nil {
		a.mu.Lock()
		if a.err == nil {
			a.err = err
		}
		a.mu.Unlock()
		a.cancel()
		return nil, err
	}
	return ans, nil
}

// secretField matches the names of form fields that ask for a secret.
var secretField = regexp.MustCompile(`(?i)(pass(word|phrase|code)?|secret|token|api[-_ ]?key|private[-_ ]?key|access[-_ ]?key|credential|card[-_ ]?(number|no)|cvv|cvc|pin\b|otp)`)

// asksForSecret reports whether an elicitation form asks for a password, a
// key, a token or a card number (by a field's name, title or format):
// servers must not ask for those, and aiod declines without asking.
func asksForSecret(p *mcp.ElicitParams) (string, bool) {
	if p == nil || p.RequestedSchema == nil {
		return "", false
	}
	b, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return "", false
	}
	var s struct {
		Properties map[string]struct {
			Title  string `json:"title"`
			Format string `json:"format"`
		} `json:"properties"`
	}
	if json.Unmarshal(b, &s) != nil {
		return "", false
	}
	for name, f := range s.Properties {
		if f.Format == "password" || secretField.MatchString(name) || secretField.MatchString(f.Title) {
			return name, true
		}
	}
	return "", false
}

// elicit is the go-sdk client's elicitation handler.
func (u *upstream) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if field, ok := asksForSecret(req.Params); ok {
		u.set.warnOnce(u.srv.Name+"\x00secret\x00"+field, "upstream MCP server %q asked for a secret (form field %q): declined without asking the client", u.srv.Name, field)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	p := *req.Params
	if p.Mode == "" && p.URL == "" {
		p.Mode = "form" // absent means a form; 2026-07-28 clients require it said
	}
	var id string
	p.Meta, id = takeAsk(p.Meta)
	ans, err := u.relay(ctx, "elicitation/create", &p, id)
	if err != nil {
		return nil, err
	}
	var r mcp.ElicitResult
	if err := json.Unmarshal(ans, &r); err != nil {
		return nil, fmt.Errorf("the client's answer to elicitation/create: %w", err)
	}
	return &r, nil
}

// sample is the go-sdk client's sampling handler.
func (u *upstream) sample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	p := *req.Params
	var id string
	p.Meta, id = takeAsk(p.Meta)
	ans, err := u.relay(ctx, "sampling/createMessage", &p, id)
	if err != nil {
		return nil, err
	}
	var r mcp.CreateMessageResult
	if err := json.Unmarshal(ans, &r); err != nil {
		return nil, fmt.Errorf("the client's answer to sampling/createMessage: %w", err)
	}
	return &r, nil
}

// takeAsk returns meta without the guard's key, and the key's value.
func takeAsk(meta mcp.Meta) (mcp.Meta, string) {
	id, ok := meta[metaAsk].(string)
	if _, has := meta[metaAsk]; !has {
		return meta, ""
	}
	out := make(mcp.Meta, len(meta))
	for k, v := range meta {
		if k != metaAsk {
			out[k] = v
		}
	}
	if len(out) == 0 {
		out = nil
	}
	if !ok || id == "" {
		id = "-" // present but not the guard's: names no call
	}
	return out, id
}

// tagAsk sets (id != "") or removes (id == "") the _meta key naming the
// call's ask in an input request read on an upstream's stream, so that a
// server cannot name a call itself.
func tagAsk(data []byte, m *wireMsg, id string) []byte {
	if m.Method != "elicitation/create" && m.Method != "sampling/createMessage" {
		return data
	}
	var params map[string]json.RawMessage
	if len(m.Params) == 0 || json.Unmarshal(m.Params, &params) != nil || params == nil {
		params = map[string]json.RawMessage{}
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(params["_meta"], &meta) != nil || meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if _, had := meta[metaAsk]; !had && id == "" {
		return data
	}
	delete(meta, metaAsk)
	if id != "" {
		meta[metaAsk], _ = json.Marshal(id)
	}
	if len(meta) == 0 {
		delete(params, "_meta")
	} else {
		params["_meta"], _ = json.Marshal(meta)
	}
	pb, err := json.Marshal(params)
	if err != nil {
		return data
	}
	out, err := setMember(data, "params", string(pb), true)
	if err != nil {
		return data
	}
	return out
}
