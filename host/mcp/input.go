package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/mcp/catalog"
)

// This file is the plugin's way to the client (hostfn.Client): request
// facts, input requests in both eras, and server notifications.

// Owner returns the principal's owner id, the registry default when empty.
func (p Principal) owner() string {
	if p.Owner == "" {
		return catalog.DefaultOwner
	}
	return p.Owner
}

// Info implements hostfn.Client.
func (rc *rpcCall) Info() []byte {
	var info json.RawMessage
	switch {
	case rc.sess != nil:
		info = rc.sess.clientInfo
	case rc.p.Meta != nil:
		info = rc.p.Meta.ClientInfo
	}
	caps := rc.caps.Raw
	if len(caps) == 0 {
		caps = json.RawMessage(`{}`)
	}
	b, _ := json.Marshal(struct {
		Era                string          `json:"era"`
		ProtocolVersion    string          `json:"protocolVersion"`
		ClientCapabilities json.RawMessage `json:"clientCapabilities"`
		ClientInfo         json.RawMessage `json:"clientInfo,omitempty"`
		Session            bool            `json:"session"`
		InputRound         int             `json:"inputRound"`
	}{rc.era.String(), rc.version, caps, info, rc.sess != nil, rc.inputRound()})
	return b
}

// inputRound is the number of input_required rounds behind the current
// request, as vouched for by its requestState (0 without one).
func (rc *rpcCall) inputRound() int {
	if rc.mrtr == nil {
		return 0
	}
	return rc.mrtr.round
}

type inputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// capabilityFor names the client capability an input method needs.
func capabilityFor(method string) string {
	switch method {
	case "elicitation/create":
		return "elicitation"
	case "sampling/createMessage":
		return "sampling"
	case "roots/list":
		return "roots"
	}
	return ""
}

func (c clientCaps) has(capability string) bool {
	switch capability {
	case "elicitation":
		return c.Elicitation
	case "sampling":
		return c.Sampling
	case "roots":
		return c.Roots
	}
	return false
}

// Input implements hostfn.Client.
func (rc *rpcCall) Input(ctx context.Context, raw []byte) ([]byte, error) {
	var reqs map[string]inputRequest
	if err := json.Unmarshal(raw, &reqs); err != nil || len(reqs) == 0 {
		return nil, clientErr(hostfn.ErrClientInvalid, "input: the request must be an object of input requests by key")
	}
	keys := make([]string, 0, len(reqs))
	for k, r := range reqs {
		capName := capabilityFor(r.Method)
		if capName == "" {
			return nil, clientErr(hostfn.ErrClientInvalid, "input %q: method %q is not elicitation/create, sampling/createMessage or roots/list", k, r.Method)
		}
		if !rc.caps.has(capName) {
			return nil, &hostfn.ClientError{Kind: hostfn.ErrClientUnavailable,
				Message: "the client did not declare the " + capName + " capability",
				Detail:  map[string]any{"requiredCapabilities": map[string]any{capName: map[string]any{}}}}
		}
		if len(r.Params) == 0 {
			r.Params = json.RawMessage(`{}`)
			reqs[k] = r
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if rc.onInput != nil {
		return rc.onInput(ctx, keys, reqs)
	}
	if rc.era == Modern {
		return rc.mrtrInput(keys, reqs)
	}
	return rc.legacyInput(ctx, keys, reqs)
}

// ---- legacy: server→client requests on the request's event stream ----

type pendingReq struct {
	owner string
	ch    chan *message
}

func (rc *rpcCall) legacyInput(ctx context.Context, keys []string, reqs map[string]inputRequest) ([]byte, error) {
	if rc.q == nil {
		return nil, clientErr(hostfn.ErrClientUnavailable, "the client cannot be asked for input on this request: it needs an initialized session and an Accept header that allows text/event-stream")
	}
	s := rc.s
	owner := rc.ex.Principal.owner()
	ids := make([]string, len(keys))
	waits := make([]*pendingReq, len(keys))
	defer func() {
		for _, id := range ids {
			if id != "" {
				s.pending.Delete(id)
			}
		}
	}()
	for i, k := range keys {
		id := strconv.Quote("aiod-" + strconv.FormatUint(s.nextID.Add(1), 10))
		pr := &pendingReq{owner: owner, ch: make(chan *message, 1)}
		s.pending.Store(id, pr)
		ids[i], waits[i] = id, pr
		msg, _ := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params"`
		}{"2.0", json.RawMessage(id), reqs[k].Method, reqs[k].Params})
		if !rc.q.send(item{msg: msg}) {
			return nil, clientErr(hostfn.ErrClientUnavailable, "the client went away")
		}
	}
	out := map[string]json.RawMessage{}
	for i, k := range keys {
		select {
		case resp := <-waits[i].ch:
			if resp.Error != nil {
				return nil, &hostfn.ClientError{Kind: hostfn.ErrClientUnavailable, Message: "the client refused input request " + k,
					Detail: map[string]any{"clientError": resp.Error}}
			}
			out[k] = resp.Result
		case <-ctx.Done():
			return nil, clientErr(hostfn.ErrClientTimeout, "no answer from the client to input request %s: %v", k, ctx.Err())
		}
	}
	return json.Marshal(out)
}

// deliver routes a client's answer to the request waiting for it.
func (s *Server) deliver(req *message, owner string) {
	v, ok := s.pending.Load(string(req.ID))
	if !ok {
		return
	}
	pr := v.(*pendingReq)
	if pr.owner != owner {
		return
	}
	s.pending.Delete(string(req.ID))
	select {
	case pr.ch <- req:
	default:
	}
}

// ---- 2026-07-28: multi round-trip requests ----

// mrtr is one run of a tools/call, prompts/get or resources/read in the
// 2026-07-28 protocol. The plugin runs from the start in every round;
// its input requests are answered from the answers collected so far
// (carried, sealed, in requestState) plus the round's inputResponses. The
// first request without an answer ends the run, and the host answers
// input_required with everything asked for and not yet answered.
type mrtr struct {
	name    string          // tool, prompt or resource
	args    json.RawMessage // its arguments
	binding []byte          // computed when first needed
	round   int
	answers map[string]json.RawMessage // available this round
	asked   map[string]bool            // asked during this run
	used    map[string]json.RawMessage // answers the plugin consumed
	pending map[string]inputRequest    // to ask the client
}

// startMRTR prepares input rounds for the current request: it opens a
// requestState (a tampered, expired or foreign one is an error) and
// takes the round's inputResponses.
func (rc *rpcCall) startMRTR(name string, args json.RawMessage) *Error {
	if rc.era != Modern {
		return nil
	}
	p := rc.p
	m := &mrtr{name: name, args: args}
	rc.mrtr = m
	var responses map[string]json.RawMessage
	if len(p.InputResponses) > 0 && string(p.InputResponses) != "null" {
		if err := json.Unmarshal(p.InputResponses, &responses); err != nil {
			rc.mrtr = nil
			return errf(CodeInvalidParams, "Invalid params: inputResponses must be an object of input responses by key")
		}
		for k, v := range responses {
			if firstByte(v) != '{' {
				rc.mrtr = nil
				return errf(CodeInvalidParams, "Invalid params: inputResponses."+k+" must be an object (an ElicitResult, CreateMessageResult or ListRootsResult)")
			}
		}
	}
	if p.RequestState != nil && *p.RequestState != "" {
		st, err := rc.s.sealer.open(*p.RequestState, rc.binding())
		if err != nil {
			rc.mrtr = nil
			return errf(CodeInvalidParams, "Invalid params: "+err.Error()+" (it was altered, has expired, or belongs to another request)")
		}
		m.answers = st.Answers
		m.round = st.Round
	}
	if m.answers == nil && len(responses) > 0 {
		m.answers = make(map[string]json.RawMessage, len(responses))
	}
	// Answers sent without a requestState (a client answering ahead) are
	// taken too: they are the client's word either way; the state only
	// vouches for what the server collected in earlier rounds.
	for k, v := range responses {
		m.answers[k] = v
	}
	rc.mrtr = m
	return nil
}

// binding is what the current request's requestState is sealed to,
// computed only when a state is opened or sealed (most calls never need
// it).
func (rc *rpcCall) binding() []byte {
	m := rc.mrtr
	if m.binding == nil {
		m.binding = stateBinding(rc.ex.Principal.owner(), rc.req.Method, paramsDigest(m.name, m.args))
	}
	return m.binding
}

// paramsDigest hashes what identifies a request across its rounds: the
// tool, prompt or resource and its arguments, canonically encoded.
func paramsDigest(name string, args json.RawMessage) [32]byte {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	if len(args) > 0 {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			// map keys come out sorted; no arguments, null and {} are alike
			if m, ok := v.(map[string]any); v != nil && (!ok || len(m) > 0) {
				canon, _ := json.Marshal(v)
				h.Write(canon)
			}
		} else {
			h.Write(args)
		}
	}
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d
}

func (rc *rpcCall) mrtrInput(keys []string, reqs map[string]inputRequest) ([]byte, error) {
	m := rc.mrtr
	if m == nil {
		return nil, clientErr(hostfn.ErrClientUnavailable, "input can only be requested from tools/call, prompts/get and resources/read")
	}
	if m.asked == nil {
		m.asked = map[string]bool{}
		m.used = map[string]json.RawMessage{}
		m.pending = map[string]inputRequest{}
	}
	out := map[string]json.RawMessage{}
	for _, k := range keys {
		ans, ok := m.answers[k]
		if ok && !m.asked[k] {
			out[k] = ans
			m.used[k] = ans
		} else {
			m.pending[k] = reqs[k]
			delete(m.used, k) // asked again: the old answer was not good enough
		}
		m.asked[k] = true
	}
	if len(m.pending) > 0 {
		return nil, clientErr(hostfn.ErrClientInputRequired, "input required: %d request(s) for the client", len(m.pending))
	}
	return json.Marshal(out)
}

// inputRequired renders the InputRequiredResult of a run that stopped for
// input.
func (rc *rpcCall) inputRequired() ([]byte, *Error) {
	m := rc.mrtr
	if len(m.pending) == 0 {
		return nil, errf(CodeInternal, "internal error: input required without input requests")
	}
	tok, err := rc.s.sealer.seal(&requestState{Answers: m.used, Round: m.round + 1}, rc.binding())
	if err != nil {
		return nil, errf(CodeInternal, "internal error: "+err.Error())
	}
	b, _ := json.Marshal(struct {
		ResultType    string                  `json:"resultType"`
		InputRequests map[string]inputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
	}{"input_required", m.pending, tok})
	return b, nil
}

// ---- notifications ----

// notify sends a plugin's log or progress notification on the request's
// stream, when the request asked for it.
func (rc *rpcCall) notify(kind string, params any) {
	m, ok := params.(map[string]any)
	if !ok || rc.q == nil {
		return
	}
	switch kind {
	case "notifications/progress":
		if len(rc.progressToken) == 0 {
			return
		}
		m["progressToken"] = rc.progressToken // echoed with its JSON type
	case "notifications/message":
		lvl, _ := m["level"].(string)
		if rc.logLevel < 0 || logLevelIndex(lvl) < rc.logLevel {
			return
		}
	default:
		return
	}
	b, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		Method  string         `json:"method"`
		Params  map[string]any `json:"params"`
	}{"2.0", kind, m})
	if err == nil {
		rc.q.send(item{msg: b})
	}
}

// Notify implements hostfn.Client: a plugin announcing a change.
func (rc *rpcCall) Notify(_ context.Context, raw []byte) error {
	var n struct {
		Method string `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return clientErr(hostfn.ErrClientInvalid, "notify: %v", err)
	}
	switch n.Method {
	case "notifications/tools/list_changed":
		rc.s.broadcastListChanged("tools")
	case "notifications/prompts/list_changed":
		rc.s.broadcastListChanged("prompts")
	case "notifications/resources/list_changed":
		rc.s.broadcastListChanged("resources")
	case "notifications/resources/updated":
		if n.Params.URI == "" {
			return clientErr(hostfn.ErrClientInvalid, "notify: resources/updated needs params.uri")
		}
		rc.s.broadcastResourceUpdated(n.Params.URI)
	default:
		return clientErr(hostfn.ErrClientInvalid, "notify: %q is not a notification a plugin may send", n.Method)
	}
	return nil
}

// clientErr is an error of the given hostfn.ErrClient* kind; the core
// family maps the kind to an ABI code.
func clientErr(kind error, format string, a ...any) error {
	return &hostfn.ClientError{Kind: kind, Message: fmt.Sprintf(format, a...)}
}
