package oauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/aiodhq/aiod/host/caps"
	"golang.org/x/oauth2"
)

// LogoutResult says what Logout did.
type LogoutResult struct {
	// Revoked are the token kinds the authorization server revoked
	// ("refresh_token", "access_token").
	Revoked []string
	// NoRevocation: the server publishes no revocation endpoint (RFC
	// 7009); the tokens were only forgotten here.
	NoRevocation bool
	// Failed is why a revocation failed (the tokens were forgotten here
	// anyway).
	Failed []string
	// Nothing: there was no login to end.
	Nothing bool
}

// Logout revokes the server's tokens where its authorization server
// supports RFC 7009 (the refresh token first: with it goes the grant) and
// forgets them, with a dynamically registered client (the next login
// registers again). lookup reads the client secret's variable of a pre-registered
// confidential client.
func Logout(ctx context.Context, srv caps.UpstreamServer, c *http.Client, store *Store, lookup func(string) (string, bool)) (*LogoutResult, error) {
	st, err := store.Load(srv.Name)
	if err != nil {
		return nil, err
	}
	res := &LogoutResult{}
	if st == nil || st.Token == nil {
		res.Nothing = true
		return res, store.Remove(srv.Name)
	}
	if st.RevocationEndpoint == "" {
		res.NoRevocation = true
	} else {
		secret := st.ClientSecret
		if st.Registration == RegPreregistered && srv.OAuth != nil && srv.OAuth.ClientSecretEnv != "" && lookup != nil {
			secret, _ = lookup(srv.OAuth.ClientSecretEnv)
		}
		for _, k := range []struct{ hint, tok string }{{"refresh_token", st.Token.RefreshToken}, {"access_token", st.Token.AccessToken}} {
			if k.tok == "" {
				continue
			}
			if err := revoke(ctx, c, st, secret, k.tok, k.hint); err != nil {
				res.Failed = append(res.Failed, fmt.Sprintf("%s: %v", k.hint, err))
				continue
			}
			res.Revoked = append(res.Revoked, k.hint)
		}
	}
	if err := store.Remove(srv.Name); err != nil {
		return nil, err
	}
	return res, nil
}

// revoke posts one token to the revocation endpoint (RFC 7009 §2.1), with
// the client's authentication as at the token endpoint.
func revoke(ctx context.Context, c *http.Client, st *State, secret, tok, hint string) error {
	form := url.Values{"token": {tok}, "token_type_hint": {hint}}
	basic := secret != "" && st.AuthStyle != oauth2.AuthStyleInParams
	if !basic {
		form.Set("client_id", st.ClientID)
		if secret != "" {
			form.Set("client_secret", secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.RevocationEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(st.ClientID), url.QueryEscape(secret))
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}
