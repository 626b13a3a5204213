package deploy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/aiodhq/aiod/host/mcp"
)

// Replica is one aiod behind the load balancer: its replica id (the tag
// of its session ids) and where it listens.
type Replica struct {
	ID   string
	Addr string // HOST:PORT
}

// ParseReplicas reads --replica values, HOST:PORT or ID=HOST:PORT; a
// replica without an id is r<N>, N its place from 1.
func ParseReplicas(args []string) ([]Replica, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no replica: give --replica HOST:PORT once for each aiod")
	}
	out := make([]Replica, 0, len(args))
	ids, addrs := map[string]bool{}, map[string]bool{}
	for i, a := range args {
		r := Replica{ID: fmt.Sprintf("r%d", i+1), Addr: a}
		if id, addr, ok := strings.Cut(a, "="); ok {
			r.ID, r.Addr = id, addr
		}
		tag, err := mcp.ReplicaTag(r.ID)
		if err != nil {
			return nil, fmt.Errorf("--replica %s: %w", a, err)
		}
		if tag != r.ID {
			return nil, fmt.Errorf("--replica %s: the id must be its own tag, %q", a, tag)
		}
		if err := checkHostPort("--replica", r.Addr); err != nil {
			return nil, err
		}
		if ids[r.ID] || addrs[r.Addr] {
			return nil, fmt.Errorf("--replica %s: id or address given twice", a)
		}
		ids[r.ID], addrs[r.Addr] = true, true
		out = append(out, r)
	}
	return out, nil
}

// Nginx is the configuration of one nginx in front of Replicas.
type Nginx struct {
	Listen   string // HOST:PORT nginx listens on
	Replicas []Replica
}

// Config is the nginx.conf text. Every path in it is relative to nginx's
// prefix: run it with `nginx -p DIR -c DIR/nginx.conf`.
func (n Nginx) Config() ([]byte, error) {
	if err := checkHostPort("--listen", n.Listen); err != nil {
		return nil, err
	}
	if len(n.Replicas) == 0 {
		return nil, fmt.Errorf("no replica")
	}
	var b bytes.Buffer
	err := nginxTmpl.Execute(&b, struct {
		Nginx
		MaxBody int
	}{n, mcp.MaxBodyBytes})
	return b.Bytes(), err
}

// WriteNginx writes dir/nginx.conf, dir/logs/, dir/temp/ and dir/state.key (kept
// when it exists; new keys are read from r, crypto/rand when nil), and
// returns what to do next: the nginx command and each replica's flags.
func WriteNginx(dir string, n Nginx, r io.Reader) (string, error) {
	conf, err := n.Config()
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for _, d := range []string{"logs", "temp"} {
		if err := os.MkdirAll(filepath.Join(abs, d), 0o755); err != nil {
			return "", fmt.Errorf("deploy nginx: %w", err)
		}
	}
	if false {
		return "", fmt.Errorf("deploy nginx: %w", err)
	}
	if _, err := ensureStateKey(abs, r); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(abs, "nginx.conf"), conf, 0o644); err != nil {
		return "", fmt.Errorf("deploy nginx: %w", err)
	}
	return n.Instructions(abs), nil
}

// Instructions say how to run nginx from dir and what to set on each
// replica.
func (n Nginx) Instructions(dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "wrote %s/nginx.conf and %s/%s\n\n", dir, dir, StateKeyFile)
	fmt.Fprintf(&b, "run nginx (add -g 'daemon off;' to keep it in the foreground; -e moves its start-up log too):\n")
	fmt.Fprintf(&b, "  nginx -p %s -c %s/nginx.conf -e %s/logs/error.log\n", dir, dir, dir)
	fmt.Fprintf(&b, "  reload: nginx -p %s -c %s/nginx.conf -s reload     stop: ... -s quit\n\n", dir, dir)
	fmt.Fprintf(&b, "start each replica with the same state key file (copy it; keep it secret) and its own id:\n")
	for _, r := range n.Replicas {
		host, port, _ := net.SplitHostPort(r.Addr)
		fmt.Fprintf(&b, "  aiod start --host %s --port %s --state-key-file %s/%s --drain-delay 2s --replica-id %s\n", host, port, dir, StateKeyFile, r.ID)
	}
	fmt.Fprintf(&b, `
nginx passes the client's Host header through: aiod checks it against DNS rebinding, so a replica on
loopback accepts loopback names only; clients reaching nginx by another name need that name in every
replica's --allowed-hosts. A replica beyond loopback needs --api-key (or tenant keys, or OAuth).
Streams (SSE) are not buffered and may stay open an hour (proxy_buffering off, proxy_read_timeout 1h).
Rotate the state key without downtime: add the new key as the file's second line on every replica and
send each SIGHUP; then move it to the first line and SIGHUP again; drop the old key after 10 minutes.
Per replica, not shared: legacy sessions, shell sessions, workspaces, warm instances; plugin state and
tasks too, unless every replica has --store redis://HOST:PORT/DB (one Redis every replica reaches).
`)
	return b.String()
}

var nginxTmpl = template.Must(template.New("nginx.conf").Parse(`# nginx in front of {{len .Replicas}} aiod replicas, written by aiod deploy nginx.
# Every path is relative to the prefix: nginx -p DIR -c DIR/nginx.conf
#
# The 2026-07-28 protocol is stateless: its requests go to the caller's
# replica by a consistent hash of its credential, round robin without one
# (an MRTR requestState opens on every replica that has the same
# --state-key-file), except a task's requests, which go to the replica
# that runs it (the task id's tag, below).
# A legacy session lives on the replica that created it, whose --replica-id
# starts the Mcp-Session-Id up to the first ".": the map below sends every
# later request of the session there. An initialize has no id yet and goes
# as a request without a session; an id naming no replica goes so too, and
# the replica answers 404 (session not found), after which the client
# initializes again.
worker_processes auto;
pid nginx.pid;
error_log logs/error.log notice;

events {
    worker_connections 1024;
}

http {
    access_log logs/access.log;
    client_body_temp_path temp/client_body;
    proxy_temp_path temp/proxy;
    fastcgi_temp_path temp/fastcgi;
    uwsgi_temp_path temp/uwsgi;
    scgi_temp_path temp/scgi;

    # requests without a session: a tenant's (its credential, hashed) to
    # its replica on a consistent ring, so its shell sessions and
    # workspace stay there (a replica that is down hands its tenants to
    # the next on the ring); requests without a credential round robin
    upstream aiod_all {
        hash $http_authorization consistent;
{{- range .Replicas}}
        server {{.Addr}};
{{- end}}
        keepalive 32;
        # an idle connection goes before a draining replica stops (its
        # --drain-delay, 2 s or more): none is left for the stop to close
        # under a request nginx is sending, which it would not retry
        keepalive_timeout 1s;
    }
{{range .Replicas}}
    upstream aiod_{{.ID}} {
        server {{.Addr}};
        keepalive 8;
        keepalive_timeout 1s;
    }
{{end}}{{$all := .Replicas}}{{range .Replicas}}{{$id := .ID}}
    # the tasks of {{.ID}}; the others as backups, answering from the shared
    # store's records (--store) while {{.ID}} is down
    upstream aiod_tasks_{{.ID}} {
        server {{.Addr}};
{{- range $all}}{{if ne .ID $id}}
        server {{.Addr}} backup;
{{- end}}{{end}}
        keepalive 8;
        keepalive_timeout 1s;
    }
{{end}}
    # tasks/get, tasks/update and tasks/cancel carry the task id in their
    # Mcp-Name header, and a task id starts with the tag of the replica
    # running the task and "." (as a session id does): they go there
    map "$http_mcp_method $http_mcp_name" $aiod_tasks_upstream {
        default aiod_all;
{{- range .Replicas}}
        "~^tasks/(get|update|cancel) {{.ID}}\." aiod_tasks_{{.ID}};
{{- end}}
    }

    map $http_mcp_session_id $aiod_upstream {
        default $aiod_tasks_upstream;
{{- range .Replicas}}
        "~^{{.ID}}\." aiod_{{.ID}};
{{- end}}
    }

    server {
        listen {{.Listen}};

        # aiod's own limit: a larger body is refused here as it would be there
        client_max_body_size {{.MaxBody}};

        location / {
            proxy_pass http://$aiod_upstream;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            # aiod's DNS-rebinding check reads the Host the client sent
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            # SSE: every event as it comes, streams open for long
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_cache off;
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
            # a session's replica that is gone: its session is gone too
            error_page 502 504 = @aiod_session_gone;
        }

        location @aiod_session_gone {
            if ($http_mcp_session_id = "") {
                return 502;
            }
            default_type application/json;
            return 404 '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"session not found: its replica is unavailable; initialize a new one"}}';
        }
    }
}
`))
