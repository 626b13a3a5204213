package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/aoi"
	"github.com/aiodhq/aiod/host/caps"
)

// keyCmd is `aiod key new`: a fresh random API key (32 bytes from the
// system's CSPRNG, base64url, prefixed "aiod_") and the line to paste in a
// tenant's "keys" (spec/tenants.md). The key is printed once and never
// stored: the policy holds only its SHA-256.
func keyCmd(args []string, stdout, stderr io.Writer) int {
	var ms *aoi.Stream
	if jsonl(args) {
		ms = startStream(stdout, "key new")
	}
	fs := flag.NewFlagSet("aiod key new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	output := outputFlag(fs)
	var err error
	if len(args) == 0 || args[0] != "new" {
		err = errors.New("usage: aiod key new [--output jsonl]")
	} else if err = fs.Parse(args[1:]); err == nil {
		if err = checkOutput(*output); err == nil && fs.NArg() > 0 {
			err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
	}
	if err != nil {
		if ms != nil {
			if errors.Is(err, flag.ErrHelp) {
				return ms.Finish(true, nil)
			}
			return abort(ms, usageError{err}, "", "")
		}
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "aiod key: %v\n", err)
		}
		return 2
	}
	key, line, err := newKey(rand.Reader)
	if err != nil {
		if ms != nil {
			return ms.Abort(err, aoi.CategoryInternal, "NO_RANDOMNESS")
		}
		fmt.Fprintf(stderr, "aiod key new: %v\n", err)
		return 1
	}
	if ms != nil {
		ms.Event("key", map[string]string{"key": key, "policy": line})
		return ms.Finish(true, nil)
	}
	fmt.Fprintf(stdout, "key:    %s\npolicy: %q\n\nGive the key to the tenant (it is shown only now); paste the policy line into the tenant's \"keys\".\n", key, line)
	return 0
}

// newKey reads 32 random bytes from r and returns the key and its policy
// entry, "sha256:<hex>".
func newKey(r io.Reader) (key, line string, err error) {
	var b [32]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", "", err
	}
	key = "aiod_" + base64.RawURLEncoding.EncodeToString(b[:])
	return key, caps.KeyLine(sha256.Sum256([]byte(key))), nil
}

// tenancyFlags are the flags of tenancy (spec/tenants.md): OAuth and the
// audit log.
func (s *startFlags) tenancyFlags(c *host.Config) {
	s.str(&c.OAuthIssuer, "oauth-issuer", "AIO_OAUTH_ISSUER", "", "OAuth: the issuer every bearer JWT must name (iss); with --oauth-audience and --oauth-jwks it turns OAuth on")
	s.str(&c.OAuthAudience, "oauth-audience", "AIO_OAUTH_AUDIENCE", "", "OAuth: this server's resource identifier; a token for another audience (aud) is refused")
	s.str(&c.OAuthJWKS, "oauth-jwks", "AIO_OAUTH_JWKS", "", "OAuth: the issuer's signing keys, a JWKS file or a loopback http(s) URL")
	s.str(&c.OAuthTenantClaim, "oauth-tenant-claim", "AIO_OAUTH_TENANT_CLAIM", "sub", "OAuth: the token claim whose value is the tenant's name")
	s.str(&c.AuditLog, "audit-log", "AIO_AUDIT_LOG", "", "append one JSON line per MCP request to this file (tenant, method, tool, sha256 of the arguments, outcome; never values, keys or tokens)")
}
