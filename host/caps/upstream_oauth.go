package caps

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// UpstreamOAuth is an upstream entry's "oauth" object: aiod gets the
// server's bearer token by OAuth 2.1 (spec/upstream.md, "OAuth").
type UpstreamOAuth struct {
	// Grant: "authorization_code" (the default: an operator logs in with
	// `aiod upstream login NAME`) or "client_credentials" (unattended).
	Grant string `json:"grant,omitempty"`
	// ClientID is a client registered beforehand with the authorization
	// server ("": a client ID metadata document, else dynamic
	// registration).
	ClientID string `json:"client_id,omitempty"`
	// ClientSecretEnv names aiod's environment variable holding the
	// client's secret (a confidential client; required with
	// client_credentials).
	ClientSecretEnv string `json:"client_secret_env,omitempty"`
	// ClientMetadataURL is the client's ID metadata document, an https URL
	// with a path, used when the authorization server supports them.
	ClientMetadataURL string `json:"client_metadata_url,omitempty"`
	// Scopes to ask for (empty: those the server's challenge or metadata
	// name).
	Scopes []string `json:"scopes,omitempty"`
}

// Grant values of UpstreamOAuth.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// ClientCredentials reports whether the entry uses the unattended grant.
func (o *UpstreamOAuth) ClientCredentials() bool { return o.Grant == GrantClientCredentials }

func (o *UpstreamOAuth) validate() error {
	switch o.Grant {
	case "", GrantAuthorizationCode:
	case GrantClientCredentials:
		if o.ClientID == "" || o.ClientSecretEnv == "" {
			return errors.New(`grant "client_credentials" needs "client_id" and "client_secret_env"`)
		}
		if o.ClientMetadataURL != "" {
			return errors.New(`"client_metadata_url" is for the "authorization_code" grant`)
		}
	default:
		return fmt.Errorf("grant %q: want \"authorization_code\" or \"client_credentials\"", o.Grant)
	}
	if strings.TrimSpace(o.ClientID) != o.ClientID || strings.ContainsAny(o.ClientID, "\x00\r\n") {
		return fmt.Errorf("client_id %q: surrounding blanks or control characters", o.ClientID)
	}
	if o.ClientSecretEnv != "" && !envName(o.ClientSecretEnv) {
		return fmt.Errorf("client_secret_env: %q is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)", o.ClientSecretEnv)
	}
	if o.ClientSecretEnv != "" && o.ClientID == "" {
		return errors.New(`"client_secret_env" needs "client_id"`)
	}
	if o.ClientMetadataURL != "" {
		u, err := url.Parse(o.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" || u.User != nil || u.Fragment != "" {
			return fmt.Errorf("client_metadata_url %q: want an https URL with a path (no credentials, no fragment)", o.ClientMetadataURL)
		}
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \"\\\x00\r\n\t") {
			return fmt.Errorf("scopes: %q is not a scope token", s)
		}
	}
	return nil
}
