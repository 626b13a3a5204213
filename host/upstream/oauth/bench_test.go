package oauth

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"golang.org/x/oauth2"
)

// BenchmarkAuthHook is what the hook adds to one request with a valid
// token (the file's stat, the lock, the header), against the request
// without it (Base).
func BenchmarkAuthHook(b *testing.B) {
	ok := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}, nil
	})
	key := make([]byte, KeySize)
	s, err := NewStore(b.TempDir(), key)
	if err != nil {
		b.Fatal(err)
	}
	e := caps.UpstreamServer{Name: "x", URL: "http://127.0.0.1:1/mcp", OAuth: &caps.UpstreamOAuth{ClientID: "c"}}
	s.Save("x", &State{Resource: e.URL, TokenEndpoint: "http://127.0.0.1:1/token", ClientID: "c", Registration: RegPreregistered,
		Token: &oauth2.Token{AccessToken: "at", TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)}})
	a, err := New(e, nil, Options{Store: s})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		rt   http.RoundTripper
	}{{"Base", ok}, {"Hook", a.Wrap(ok)}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				req, _ := http.NewRequest(http.MethodPost, e.URL, strings.NewReader("{}"))
				resp, err := bc.rt.RoundTrip(req)
				if err != nil || resp.StatusCode != 200 {
					b.Fatal(err)
				}
			}
		})
	}
}
