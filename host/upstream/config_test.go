package upstream

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseServers(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    []Server
		warns   []string // substrings, one per warning, in order
		wantErr string   // substring of the error
	}{
		{name: "empty", value: "", want: nil},
		{name: "blank", value: " \n\t", want: nil},
		{name: "empty object", value: "{}", want: nil},
		{
			name:  "seed example, order as written",
			value: `{"peer":{"url":"http://127.0.0.1:18091/mcp","prefix":"peer"},"gone":{"url":"http://127.0.0.1:18111/mcp","prefix":"gone"}}`,
			want:  []Server{{Name: "peer", URL: "http://127.0.0.1:18091/mcp", Prefix: "peer"}, {Name: "gone", URL: "http://127.0.0.1:18111/mcp", Prefix: "gone"}},
		},
		{
			name:  "order is the object's, not sorted",
			value: `{"zeta":{"url":"http://localhost:1/mcp"},"alpha":{"url":"http://[::1]:2/mcp","prefix":""},"mid":{"url":"http://LOCALHOST:3/"}}`,
			want:  []Server{{Name: "zeta", URL: "http://localhost:1/mcp", Prefix: ""}, {Name: "alpha", URL: "http://[::1]:2/mcp", Prefix: ""}, {Name: "mid", URL: "http://LOCALHOST:3/", Prefix: ""}},
		},
		{
			name:  "remote http skipped",
			value: `{"far":{"url":"http://example.com/mcp","prefix":"far"},"near":{"url":"http://127.0.0.1:9/mcp"}}`,
			want:  []Server{{Name: "near", URL: "http://127.0.0.1:9/mcp", Prefix: ""}},
			warns: []string{`"far"`},
		},
		{
			name:  "https remote and https loopback skipped",
			value: `{"a":{"url":"https://example.com/mcp"},"b":{"url":"https://127.0.0.1/mcp"}}`,
			warns: []string{"https to a remote host", "https is not accepted"},
		},
		{
			name:  "other loopback-looking hosts are remote",
			value: `{"a":{"url":"http://127.0.0.2/mcp"},"b":{"url":"http://localhost.example.com/"},"c":{"url":"http://0.0.0.0:1/"}}`,
			warns: []string{"remote host", "remote host", "remote host"},
		},
		{
			name:  "command entries skipped",
			value: `{"fs":{"command":"npx","args":["-y","server-fs"]},"t":{"type":"stdio","url":"http://127.0.0.1/"},"ok":{"url":"http://127.0.0.1:1/"}}`,
			want:  []Server{{Name: "ok", URL: "http://127.0.0.1:1/", Prefix: ""}},
			warns: []string{`command (stdio)`, `command (stdio)`},
		},
		{
			name:  "scheme and credentials",
			value: `{"a":{"url":"ws://127.0.0.1/"},"b":{"url":"http://u:secret@127.0.0.1/"}}`,
			warns: []string{`scheme "ws"`, "credentials"},
		},
		{
			name:  "unknown field warned, entry kept",
			value: `{"a":{"url":"http://127.0.0.1:1/mcp","hidden":true}}`,
			want:  []Server{{Name: "a", URL: "http://127.0.0.1:1/mcp", Prefix: ""}},
			warns: []string{`unknown field "hidden"`},
		},
		{
			name:  "hub type accepted, sse type skipped",
			value: `{"a":{"type":"streamable-http","url":"http://127.0.0.1:1/mcp"},"b":{"type":"sse","url":"http://127.0.0.1:2/sse"}}`,
			want:  []Server{{Name: "a", URL: "http://127.0.0.1:1/mcp", Prefix: ""}},
			warns: []string{`type "sse"`},
		},
		{name: "not JSON", value: `{"a":`, wantErr: "not valid JSON"},
		{name: "array", value: `[{"url":"http://127.0.0.1/"}]`, wantErr: "want a JSON object"},
		{name: "string", value: `"x"`, wantErr: "got a string"},
		{name: "trailing data", value: `{} {}`, wantErr: "trailing data"},
		{name: "entry not an object", value: `{"a":"http://127.0.0.1/"}`, wantErr: `server "a": want an object`},
		{name: "url not a string", value: `{"a":{"url":5}}`, wantErr: `server "a": url: want a string`},
		{name: "prefix not a string", value: `{"a":{"url":"http://127.0.0.1/","prefix":true}}`, wantErr: "prefix: want a string"},
		{name: "neither url nor command", value: `{"a":{"prefix":"p"}}`, wantErr: `server "a": has neither`},
		{name: "duplicate name", value: `{"a":{"url":"http://127.0.0.1:1/"},"a":{"url":"http://127.0.0.1:2/"}}`, wantErr: `"a" appears twice`},
		{name: "duplicate field", value: `{"a":{"url":"http://127.0.0.1:1/","url":"http://example.com/"}}`, wantErr: `field "url" appears twice`},
		{name: "empty name", value: `{"":{"url":"http://127.0.0.1:1/"}}`, wantErr: "must not be empty"},
		{name: "bad name", value: `{"a b":{"url":"http://127.0.0.1:1/"}}`, wantErr: `server name "a b"`},
		{name: "bad prefix", value: `{"a":{"url":"http://127.0.0.1:1/","prefix":"p/q"}}`, wantErr: `prefix "p/q"`},
		{name: "long name", value: `{"` + strings.Repeat("n", 65) + `":{"url":"http://127.0.0.1:1/"}}`, wantErr: "longer than 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns, err := ParseServers(tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if got != nil || warns != nil {
					t.Fatalf("with an error, want no servers and no warnings, got %v %v", got, warns)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("servers = %#v, want %#v", got, tt.want)
			}
			if len(warns) != len(tt.warns) {
				t.Fatalf("warnings = %v, want %d", warns, len(tt.warns))
			}
			for i, w := range warns {
				if !strings.Contains(w.String(), tt.warns[i]) {
					t.Errorf("warning %d = %q, want it to contain %q", i, w, tt.warns[i])
				}
				if w.Server == "" || !strings.Contains(w.String(), `"`+w.Server+`"`) {
					t.Errorf("warning %d does not name its entry: %q", i, w)
				}
			}
		})
	}
}

func FuzzParseServers(f *testing.F) {
	for _, s := range []string{
		`{"peer":{"url":"http://127.0.0.1:18091/mcp","prefix":"peer"}}`,
		`{"a":{"command":"x"},"b":{"url":"https://example.com"}}`,
		`{"a":{"url":"http://[::1]:1/","x":[1,{"y":null}]}}`,
		`[]`, `{"a":`, `{}`, `null`, `{"a":{"url":"http://127.0.0.1:1/","url":"x"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		servers, warns, err := ParseServers(value)
		if err != nil {
			if servers != nil || warns != nil {
				t.Fatalf("error %v with servers %v or warnings %v", err, servers, warns)
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range servers {
			if reason := checkURL(s.URL); reason != "" {
				t.Fatalf("accepted %q: %s", s.URL, reason)
			}
			if checkIdent(s.Name) != nil || (s.Prefix != "" && checkIdent(s.Prefix) != nil) {
				t.Fatalf("accepted bad name or prefix %#v", s)
			}
			if seen[s.Name] {
				t.Fatalf("name %q twice", s.Name)
			}
			seen[s.Name] = true
		}
		// Accepted input is a JSON object; the order of servers is the order
		// of its keys.
		if len(servers) > 0 && !json.Valid([]byte(value)) {
			t.Fatalf("accepted invalid JSON %q", value)
		}
	})
}
