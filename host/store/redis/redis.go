// Package redis is the store.Store in a Redis (or Valkey) server that
// several aiod replicas share (--store redis://host:port/db): the state
// spaces, the records, and the tenants' calls_per_minute buckets. Every
// change that reads before it writes is one Lua script, atomic on the
// server; a server that is down or slow fails the operation with an
// error naming it, and the client reconnects by itself when it is back.
package redis

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aiodhq/aiod/host/store"
	goredis "github.com/redis/go-redis/v9"
)

// Timeout bounds one operation (dial, read or write) against the server:
// a slow server fails the call that needed it rather than holding it.
const Timeout = 2 * time.Second

// quiet drops the client library's own log lines (plain text on stderr,
// beside aiod's JSON): what fails is reported by the operation that
// needed the server, as an error naming it.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() { goredis.SetLogger(quiet{}) }

// Store is the Redis store.
type Store struct {
	c    *goredis.Client
	addr string
	max  int64
}

var _ store.Store = (*Store)(nil)

// Open connects to the server at url (redis://[user:password@]host:port[/db],
// or rediss:// for TLS), holding at most maxBytes of state across every
// replica (store.DefaultMaxBytes if <= 0). It pings the server once: a
// server that does not answer is an error at start, naming it.
func Open(ctx context.Context, url string, maxBytes int64) (*Store, error) {
	opt, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", redact(url), err)
	}
	if maxBytes <= 0 {
		maxBytes = store.DefaultMaxBytes
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = Timeout, Timeout, Timeout
	opt.MaxRetries = 1
	opt.ContextTimeoutEnabled = true
	s := &Store{c: goredis.NewClient(opt), addr: opt.Addr, max: maxBytes}
	pctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if err := s.c.Ping(pctx).Err(); err != nil {
		s.c.Close()
		return nil, fmt.Errorf("the state store (%s) does not answer: %w", s, err)
	}
	return s, nil
}

// redact drops a password from a URL for messages.
func redact(url string) string {
	if at := strings.LastIndex(url, "@"); at > 0 {
		if i := strings.Index(url, "://"); i >= 0 && i < at {
			return url[:i+3] + "…" + url[at:]
		}
	}
	return url
}

func (s *Store) String() string { return "redis " + s.addr }

// Close closes the connections.
func (s *Store) Close() error { return s.c.Close() }

// Keys. Plugin names are [a-z0-9-] (no colon); owners are hex so that
// any name is one key.
func spaceKey(sp store.Space) string {
	return "aiod:state:" + sp.Plugin + ":" + hex.EncodeToString([]byte(sp.Owner))
}
func usageKey(sp store.Space) string {
	return "aiod:usage:" + sp.Plugin + ":" + hex.EncodeToString([]byte(sp.Owner))
}

const totalKey = "aiod:state-total"

func recordKey(id string) string { return "aiod:rec:" + hex.EncodeToString([]byte(id)) }

func (s *Store) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, Timeout)
}

func (s *Store) wrap(err error) error {
	if err == nil {
		return nil
	}
	return &store.UnavailableError{Store: s.String(), Err: err}
}

func (s *Store) Get(ctx context.Context, sp store.Space, key string) (string, bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	v, err := s.c.HGet(ctx, spaceKey(sp), key).Result()
	if errors.Is(err, goredis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.wrap(err)
	}
	return v, true, nil
}

// setScript: KEYS space, usage, total; ARGV key, value, limit, max.
// Returns {status, would-use, used}: status 1 done, 0 over the space's
// limit, -1 over the store's.
var setScript = goredis.NewScript(`
local old = redis.call('HGET', KEYS[1], ARGV[1])
local delta = #ARGV[1] + #ARGV[2]
if old then delta = delta - #ARGV[1] - #old end
local used = tonumber(redis.call('GET', KEYS[2]) or '0')
if used + delta > tonumber(ARGV[3]) then return {0, used + delta, used} end
local total = tonumber(redis.call('GET', KEYS[3]) or '0')
if total + delta > tonumber(ARGV[4]) then return {-1, used + delta, used} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('INCRBY', KEYS[2], delta)
redis.call('INCRBY', KEYS[3], delta)
return {1, used + delta, used + delta}
`)

func (s *Store) Set(ctx context.Context, sp store.Space, key, value string, limit int64) (int64, error) {
	if err := store.CheckKey(key); err != nil {
		return 0, err
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	r, err := setScript.Run(ctx, s.c, []string{spaceKey(sp), usageKey(sp), totalKey}, key, value, limit, s.max).Int64Slice()
	if err != nil {
		return 0, s.wrap(err)
	}
	if len(r) != 3 {
		return 0, s.wrap(fmt.Errorf("the set script answered %v", r))
	}
	switch r[0] {
	case 0:
		return r[2], &store.TooLargeError{Used: r[1], Limit: limit}
	case -1:
		return r[2], &store.TooLargeError{Used: r[1], Limit: limit, Store: s.max}
	}
	return r[2], nil
}

// deleteScript: KEYS space, usage, total; ARGV key. Returns 1 if the key
// was there.
var deleteScript = goredis.NewScript(`
local old = redis.call('HGET', KEYS[1], ARGV[1])
if not old then return 0 end
local n = #ARGV[1] + #old
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('DECRBY', KEYS[2], n) <= 0 then redis.call('DEL', KEYS[2]) end
redis.call('DECRBY', KEYS[3], n)
return 1
`)

func (s *Store) Delete(ctx context.Context, sp store.Space, key string) (bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	n, err := deleteScript.Run(ctx, s.c, []string{spaceKey(sp), usageKey(sp), totalKey}, key).Int64()
	if err != nil {
		return false, s.wrap(err)
	}
	return n == 1, nil
}

func (s *Store) List(ctx context.Context, sp store.Space, prefix, after string, limit int) ([]string, bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	all, err := s.c.HKeys(ctx, spaceKey(sp)).Result()
	if err != nil {
		return nil, false, s.wrap(err)
	}
	var keys []string
	for _, k := range all {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) > limit {
		return keys[:limit], true, nil
	}
	return keys, false, nil
}

func (s *Store) Usage(ctx context.Context, sp store.Space) (int64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	n, err := s.c.Get(ctx, usageKey(sp)).Int64()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	return n, s.wrap(err)
}

func (s *Store) PutRecord(ctx context.Context, id string, val []byte, ttl time.Duration) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	return s.wrap(s.c.Set(ctx, recordKey(id), val, max(ttl, store.MinRecordTTL)).Err())
}

func (s *Store) AddRecord(ctx context.Context, id string, val []byte, ttl time.Duration) (bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	ok, err := s.c.SetNX(ctx, recordKey(id), val, max(ttl, store.MinRecordTTL)).Result()
	return ok, s.wrap(err)
}

func (s *Store) GetRecord(ctx context.Context, id string) ([]byte, bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	b, err := s.c.Get(ctx, recordKey(id)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.wrap(err)
	}
	return b, true, nil
}

// takeScript is a token bucket every replica shares: KEYS the bucket;
// ARGV tokens per second, burst. The server's clock is the only clock.
// Returns {1, 0} when a token was taken, else {0, ms until one is there}.
var takeScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(v[1]) or burst
local ts = tonumber(v[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
local ok = 0
if tokens >= 1 then tokens = tokens - 1; ok = 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
if ok == 1 then return {1, 0} end
return {0, math.ceil((1 - tokens) / rate * 1000)}
`)

// Take takes one token of tenant's calls_per_minute bucket, shared by
// every replica: perMinute tokens a minute, holding at most burst. It
// reports whether one was there and, if not, how long until one is.
func (s *Store) Take(ctx context.Context, tenant string, perMinute, burst int) (bool, time.Duration, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	r, err := takeScript.Run(ctx, s.c, []string{"aiod:rate:" + hex.EncodeToString([]byte(tenant))},
		float64(perMinute)/60, burst).Int64Slice()
	if err != nil {
		return false, 0, s.wrap(err)
	}
	if len(r) != 2 {
		return false, 0, s.wrap(fmt.Errorf("the rate script answered %v", r))
	}
	return r[0] == 1, time.Duration(r[1]) * time.Millisecond, nil
}
