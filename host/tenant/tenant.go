// Package tenant enforces the tenants of the operator's policy
// (spec/tenants.md, caps.Tenant): it resolves an API key to its tenant by
// the key's digest, admits requests within the tenant's quotas, and hides
// from each tenant what its allow-lists do not name, through the protocol
// layer's middleware seam (Middleware) and a Catalog that refuses hidden
// names as unknown (Catalog).
//
// The single-tenant form is the tenant plugin.DefaultOwner: it is
// unrestricted, and is what a request without a tenant is served as.
package tenant

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"math"
	"sort"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/plugin"
)

// Tenant is one tenant as the host serves it.
type Tenant struct {
	// Name is the tenant's name: the owner of its instances, state,
	// processes and sessions.
	Name string
	// Policy is the tenant's policy entry; the zero value for an
	// unrestricted tenant.
	Policy caps.Tenant
	// Unrestricted tenants see every tool, upstream and the browser, and
	// have no quotas (the single-tenant form, and OAuth subjects when the
	// policy names no tenants).
	Unrestricted bool

	lim *limits
}

// limits are a tenant's live quota counters; kept across policy reloads
// that leave the tenant's quotas as they were.
type limits struct {
	q      caps.Quotas
	rate   *rate.Limiter // nil: no rate quota
	burst  int
	sem    chan struct{} // nil: no concurrency quota
	shared *sharedRef    // the Set's shared buckets, if any
}

func newLimits(q caps.Quotas, shared *sharedRef) *limits {
	l := &limits{q: q, shared: shared}
	if q.CallsPerMinute > 0 {
		l.burst = max(1, q.CallsPerMinute/6) // ten seconds' worth
		l.rate = rate.NewLimiter(rate.Limit(float64(q.CallsPerMinute)/60), l.burst)
	}
	if q.ConcurrentCalls > 0 {
		l.sem = make(chan struct{}, q.ConcurrentCalls)
	}
	return l
}

// Quota names, as QuotaError.Quota and the metrics label them.
const (
	QuotaConcurrentCalls = "concurrent_calls"
	QuotaCallsPerMinute  = "calls_per_minute"
	QuotaSessions        = "sessions"
)

// QuotaError is a request refused because its tenant is at a quota.
type QuotaError struct {
	Tenant     string
	Quota      string // QuotaConcurrentCalls, QuotaCallsPerMinute
	Limit      int
	RetryAfter time.Duration
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota exceeded: tenant %s is at its %s quota (%d); retry after %d s", e.Tenant, e.Quota, e.Limit, e.RetryAfterSeconds())
}

// RetryAfterSeconds is RetryAfter rounded up to whole seconds, at least 1
// (the Retry-After header's unit).
func (e *QuotaError) RetryAfterSeconds() int {
	return max(1, int(math.Ceil(e.RetryAfter.Seconds())))
}

// Admit takes one request slot of t: release gives it back when the
// request is done (idempotent). Over a quota it returns a *QuotaError and
// takes nothing. It never waits, so a tenant at its quota cannot hold up
// another.
func (t *Tenant) Admit() (release func(), err *QuotaError) { return t.admit(true) }

// AdmitRate admits a request that steers work already admitted (a task's
// tasks/get, tasks/update, tasks/cancel): it takes a calls_per_minute
// token but no concurrent_calls slot, so a tenant whose slots its running
// tasks hold can still poll and cancel them.
func (t *Tenant) AdmitRate() (release func(), err *QuotaError) { return t.admit(false) }

func (t *Tenant) admit(slot bool) (release func(), err *QuotaError) {
	if t == nil || t.lim == nil {
		return func() {}, nil
	}
	l := t.lim
	sem := l.sem
	if !slot {
		sem = nil
	}
	if sem != nil {
		select {
		case sem <- struct{}{}:
		default:
			return nil, &QuotaError{Tenant: t.Name, Quota: QuotaConcurrentCalls, Limit: l.q.ConcurrentCalls, RetryAfter: time.Second}
		}
	}
	if l.rate != nil {
		if ok, d := l.take(t.Name); !ok {
			if sem != nil {
				<-sem
			}
			return nil, &QuotaError{Tenant: t.Name, Quota: QuotaCallsPerMinute, Limit: l.q.CallsPerMinute, RetryAfter: d}
		}
	}
	if sem == nil {
		return func() {}, nil
	}
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			<-sem
		}
	}, nil
}

// take takes a calls_per_minute token: from the bucket every replica
// shares when there is one (Set.Share), else (or when the shared one
// cannot be reached) from this process's own. It reports whether one was
// there, and if not how long until one is.
func (l *limits) take(tenant string) (bool, time.Duration) {
	if sh := l.shared.p.Load(); sh != nil {
		ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		ok, d, err := sh.b.Take(ctx, tenant, l.q.CallsPerMinute, l.burst)
		cancel()
		if err == nil {
			return ok, d
		}
		if sh.onErr != nil {
			sh.onErr(err)
		}
	}
	now := time.Now()
	r := l.rate.ReserveN(now, 1)
	if d := r.DelayFrom(now); !r.OK() || d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// SharedBuckets are calls_per_minute buckets every replica shares
// (host/store/redis): Take takes one token of tenant's bucket of
// perMinute tokens a minute holding at most burst.
type SharedBuckets interface {
	Take(ctx context.Context, tenant string, perMinute, burst int) (bool, time.Duration, error)
}

// sharedTimeout bounds one Take: past it the call is admitted by this
// process's own bucket.
const sharedTimeout = time.Second

type sharedRef struct{ p atomic.Pointer[shared] }

type shared struct {
	b     SharedBuckets
	onErr func(error)
}

// Share makes every tenant's calls_per_minute a bucket of b, shared with
// the other replicas using b, instead of one of this process's. When b
// cannot be reached, a request is admitted by this process's own bucket
// (calls keep working; the quota is per replica meanwhile) and onErr is
// told.
func (s *Set) Share(b SharedBuckets, onErr func(error)) {
	s.shared.p.Store(&shared{b: b, onErr: onErr})
}

// Allowed reports whether t may see and use name (a tool or prompt name,
// a resource URI or template).
func (t *Tenant) Allowed(name string) bool {
	return t == nil || t.Unrestricted || t.Policy.ToolAllowed(name)
}

// UpstreamAllowed reports whether t may see and call the tools of the
// upstream server.
func (t *Tenant) UpstreamAllowed(server string) bool {
	return t == nil || t.Unrestricted || t.Policy.UpstreamAllowed(server)
}

// BrowserAllowed reports whether t's plugins may use the browser.
func (t *Tenant) BrowserAllowed() bool { return t == nil || t.Unrestricted || t.Policy.Browser }

// Quotas are t's quotas (zero: none).
func (t *Tenant) Quotas() caps.Quotas {
	if t == nil {
		return caps.Quotas{}
	}
	return t.Policy.Quotas
}

// Set is the host's tenants: safe for concurrent use, replaced whole by
// Update when the policy is reloaded.
type Set struct {
	cur    atomic.Pointer[table]
	shared *sharedRef
}

type table struct {
	byName map[string]*Tenant
	keys   map[[32]byte]*Tenant // every key digest, each of exactly one tenant
	// restricted: the policy names tenants, so a name it does not know is
	// no tenant (OAuth subjects among them).
	restricted bool
}

// New returns the set of the policy's tenants, plus the unrestricted
// tenant plugin.DefaultOwner, reached with apiKey when it is not empty.
func New(tenants map[string]caps.Tenant, apiKey string) *Set {
	s := &Set{shared: &sharedRef{}}
	s.cur.Store(build(tenants, apiKey, nil, s.shared))
	return s
}

// Update replaces the tenants (a reloaded policy). A tenant whose quotas
// did not change keeps its counters: a reload does not reset a bucket.
func (s *Set) Update(tenants map[string]caps.Tenant, apiKey string) {
	s.cur.Store(build(tenants, apiKey, s.cur.Load(), s.shared))
}

func build(tenants map[string]caps.Tenant, apiKey string, prev *table, shared *sharedRef) *table {
	t := &table{byName: map[string]*Tenant{}, keys: map[[32]byte]*Tenant{}, restricted: len(tenants) > 0}
	def := &Tenant{Name: plugin.DefaultOwner, Unrestricted: true}
	t.byName[def.Name] = def
	if apiKey != "" {
		t.keys[sha256.Sum256([]byte(apiKey))] = def
	}
	names := make([]string, 0, len(tenants))
	for n := range tenants {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := tenants[n]
		p.Keys = append([]string(nil), p.Keys...)
		nt := &Tenant{Name: n, Policy: p}
		if prev != nil {
			if old := prev.byName[n]; old != nil && old.lim != nil && old.lim.q == p.Quotas {
				nt.lim = old.lim
			}
		}
		if nt.lim == nil {
			nt.lim = newLimits(p.Quotas, shared)
		}
		t.byName[n] = nt
		for _, sum := range p.KeyHashes() {
			t.keys[sum] = nt // caps refuses a digest in two places
		}
	}
	return t
}

// Authenticate returns the tenant key belongs to. It hashes key and looks
// the digest up in the table of digests: the lookup's time depends only on
// the digest, which a caller cannot steer toward a stored one without a
// SHA-256 preimage, so it tells nothing of which tenant (or whether any)
// matched, and it costs the same at 10 tenants or 100,000.
func (s *Set) Authenticate(key string) (*Tenant, bool) {
	if key == "" {
		return nil, false
	}
	t := s.cur.Load().keys[sha256.Sum256([]byte(key))]
	return t, t != nil
}

// HasKeys reports whether any key opens the set (an API key or a tenant
// key): then every request must carry one.
func (s *Set) HasKeys() bool { return len(s.cur.Load().keys) > 0 }

// Restricted reports whether the policy names tenants.
func (s *Set) Restricted() bool { return s.cur.Load().restricted }

// Lookup returns the tenant called name. An unknown name is no tenant
// when the policy names tenants; otherwise (OAuth subjects of a host
// without tenants) it is an unrestricted tenant of that name.
func (s *Set) Lookup(name string) (*Tenant, bool) {
	tb := s.cur.Load()
	if t := tb.byName[name]; t != nil {
		return t, true
	}
	if tb.restricted || !caps.ValidTenantName(name) {
		return nil, false
	}
	return &Tenant{Name: name, Unrestricted: true}, true
}

// Names lists the tenants of the policy and the default one, sorted.
func (s *Set) Names() []string {
	names := make([]string, 0, len(s.cur.Load().byName))
	for n := range maps.Keys(s.cur.Load().byName) {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ForOwner resolves the owner id of a request to its tenant; "" is the
// default tenant. An owner the set does not know is served as a tenant
// with nothing allowed (fail closed).
func (s *Set) ForOwner(owner string) *Tenant {
	if owner == "" {
		owner = plugin.DefaultOwner
	}
	if t, ok := s.Lookup(owner); ok {
		return t
	}
	return &Tenant{Name: owner}
}

type ctxKey struct{}

// WithTenant returns ctx carrying t (the middleware does it for every
// request it serves).
func WithTenant(ctx context.Context, t *Tenant) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the tenant ctx carries; nil (unrestricted) when none.
func FromContext(ctx context.Context) *Tenant {
	t, _ := ctx.Value(ctxKey{}).(*Tenant)
	return t
}

// ToolSearch reports whether tool search is on for t: its policy's
// tool_search when set, else def (the host's --tool-search).
func (t *Tenant) ToolSearch(def bool) bool {
	if t != nil && t.Policy.ToolSearch != nil {
		return *t.Policy.ToolSearch
	}
	return def
}

// Usage is a tenant's use of its rate and concurrency quotas now.
type Usage struct {
	// InFlight is the requests holding a concurrent_calls slot (0 without
	// that quota: then nothing counts them).
	InFlight int `json:"in_flight"`
	// TokensLeft is the calls_per_minute bucket's tokens now (-1 without
	// that quota).
	TokensLeft float64 `json:"tokens_left"`
}

// Usage reports t's use of its quotas now.
func (t *Tenant) Usage() Usage {
	u := Usage{TokensLeft: -1}
	if t == nil || t.lim == nil {
		return u
	}
	u.InFlight = len(t.lim.sem)
	if t.lim.rate != nil {
		u.TokensLeft = max(0, t.lim.rate.Tokens())
	}
	return u
}
