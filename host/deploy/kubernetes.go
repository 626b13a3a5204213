package deploy

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/aiodhq/aiod/host/mcp"
)

// Kubernetes is what `aiod deploy kubernetes` writes: the aiod StatefulSet
// (pods named <name>-0, <name>-1, ...) and the headless Service naming
// each in DNS, the router (nginx: a ConfigMap, a Deployment and the
// Service clients reach) and the Secret with the state key file. See
// RATIONALE.md, "Replicas behind a load balancer", for why the affinity
// is a router of its own and the pods a StatefulSet.
type Kubernetes struct {
	Replicas    int
	Image       string // the aiod image
	Namespace   string // default "default"
	Name        string // default "aiod": the objects' names and app label
	RouterImage string // default DefaultRouterImage
}

// DefaultRouterImage is the router's nginx image.
const DefaultRouterImage = "nginx:1.27"

// MaxReplicas bounds --replicas: each pod of the router's ring takes at
// least 0.1% of the tenants (split_clients counts in hundredths).
const MaxReplicas = 1000

// aiodPort is where aiod listens in its pod, and the router in its.
const aiodPort = 8080

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func (k Kubernetes) withDefaults() (Kubernetes, error) {
	if k.Namespace == "" {
		k.Namespace = "default"
	}
	if k.Name == "" {
		k.Name = "aiod"
	}
	if k.RouterImage == "" {
		k.RouterImage = DefaultRouterImage
	}
	if k.Replicas < 1 || k.Replicas > MaxReplicas {
		return k, fmt.Errorf("--replicas %d: 1 to %d (the router's ring shares the tenants in hundredths of a percent)", k.Replicas, MaxReplicas)
	}
	if k.Image == "" || strings.ContainsAny(k.Image, " \t\n\"'") {
		return k, fmt.Errorf("--image %q: the aiod image, e.g. registry.example/aiod:0.2.0", k.Image)
	}
	if strings.ContainsAny(k.RouterImage, " \t\n\"'") {
		return k, fmt.Errorf("--router-image %q: not an image reference", k.RouterImage)
	}
	for what, v := range map[string]string{"--namespace": k.Namespace, "--name": k.Name} {
		if !dnsLabel.MatchString(v) || (what == "--name" && len(v) > 40) {
			return k, fmt.Errorf("%s %q: a DNS label (lower-case letters, digits, '-')", what, v)
		}
	}
	return k, nil
}

// Files are the manifests by file name, the Secrets holding stateKey (a
// state key file's content) and apiKey (the key clients send).
func (k Kubernetes) Files(stateKey []byte, apiKey string) (map[string][]byte, error) {
	k, err := k.withDefaults()
	if err != nil {
		return nil, err
	}
	data := struct {
		Kubernetes
		Port      int
		MaxBody   int
		StateKey  string
		APIKey    string
		RouterCfg string
		Pods      []ringPod
	}{Kubernetes: k, Port: aiodPort, MaxBody: mcp.MaxBodyBytes, StateKey: base64.StdEncoding.EncodeToString(stateKey),
		APIKey: base64.StdEncoding.EncodeToString([]byte(apiKey)), Pods: ring(k.Name, k.Replicas)}
	var cfg bytes.Buffer
	if err := routerTmpl.Execute(&cfg, data); err != nil {
		return nil, err
	}
	data.RouterCfg = indent(cfg.String(), "    ")
	out := map[string][]byte{}
	for _, name := range []string{"secret.yaml", "aiod.yaml", "router.yaml"} {
		var b bytes.Buffer
		if err := k8sTmpl.ExecuteTemplate(&b, name, data); err != nil {
			return nil, err
		}
		out[name] = b.Bytes()
	}
	return out, nil
}

// ringPod is one aiod pod of the router's ring: its name, the share of
// the tenants' hash it takes ("" for the last: the rest) and the pod after
// it, which takes its tenants while it is down.
type ringPod struct{ Name, Share, Next string }

// ring is the StatefulSet's pods in order, sharing the hash equally.
func ring(name string, n int) []ringPod {
	out := make([]ringPod, n)
	for i := range out {
		out[i] = ringPod{Name: fmt.Sprintf("%s-%d", name, i), Next: fmt.Sprintf("%s-%d", name, (i+1)%n)}
		if i < n-1 {
			// split_clients takes at most two decimals; the last pod takes
			// what the others leave
			out[i].Share = fmt.Sprintf("%.2f%%", 100/float64(n)-0.005)
		}
	}
	return out
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pre + l
		}
	}
	return strings.Join(lines, "\n")
}

// WriteKubernetes writes the manifests into dir (the state key of
// dir/state.key and the API key of dir/api.key, each made when missing
// from bytes read from r, crypto/rand when nil) and returns what to do
// next.
func WriteKubernetes(dir string, k Kubernetes, r io.Reader) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("deploy kubernetes: %w", err)
	}
	key, err := ensureStateKey(dir, r)
	if err != nil {
		return "", err
	}
	apiKey, err := ensureAPIKey(dir, r)
	if err != nil {
		return "", err
	}
	files, err := k.Files(key, apiKey)
	if err != nil {
		return "", err
	}
	for name, b := range files {
		mode := os.FileMode(0o644)
		if name == "secret.yaml" {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, mode); err != nil {
			return "", fmt.Errorf("deploy kubernetes: %w", err)
		}
	}
	k, _ = k.withDefaults()
	return fmt.Sprintf(`wrote %[1]s/secret.yaml (the state key and the API key: keep it secret), %[1]s/aiod.yaml, %[1]s/router.yaml

  kubectl apply -f %[1]s

Clients reach the Service %[2]s in namespace %[3]s (port 80; put your ingress or load balancer in
front of it) with the key of %[1]s/api.key (Authorization: Bearer KEY). It is nginx (the router): a
request goes to its tenant's pod by a hash of its credential (%[2]s-0 to %[2]s-%[4]d, named in the
headless Service %[2]s-replicas; while that pod is down, to the next one), a legacy session and a
task to the pod whose name starts their id. Every client sending the one API key is one tenant, on
one pod: give tenants their own keys (the policy's tenants) or OAuth, editing the StatefulSet's
arguments, to spread them. Changing --replicas: run aiod deploy kubernetes again (the router's ring
lists the pods). Rotate the state key
as spec/protocol.md (section 9) says, editing the Secret (the mounted file follows within a minute);
after each step send every pod SIGHUP, or kubectl rollout restart statefulset/%[2]s.
Per pod, not shared: legacy sessions, shell sessions, workspaces, warm instances; plugin state and
tasks too, unless every pod has --store redis://HOST:PORT/DB (one Redis every replica reaches).
`, dir, k.Name, k.Namespace, k.Replicas-1), nil
}

var k8sTmpl = template.Must(template.New("k8s").Parse(`
{{- define "secret.yaml" -}}
# The MRTR requestState key every aiod pod shares (aiod start --state-key-file),
# and the API key every client sends (aiod start --api-key).
apiVersion: v1
kind: Secret
metadata:
  name: {{.Name}}-state-key
  namespace: {{.Namespace}}
  labels:
    app.kubernetes.io/name: {{.Name}}
type: Opaque
data:
  state.key: {{.StateKey}}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{.Name}}-api-key
  namespace: {{.Namespace}}
  labels:
    app.kubernetes.io/name: {{.Name}}
type: Opaque
data:
  api-key: {{.APIKey}}
{{end}}

{{- define "aiod.yaml" -}}
# {{.Replicas}} aiod replicas ({{.Name}}-0, {{.Name}}-1, ...) and the headless Service that names
# each ready pod in DNS ({{.Name}}-0.{{.Name}}-replicas.{{.Namespace}}.svc.cluster.local), which the router
# sends a tenant's requests, a legacy session's and a task's to. A StatefulSet: a pod keeps its
# name across restarts, so a tenant's place on the router's ring stays the same.
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{.Name}}
  namespace: {{.Namespace}}
  labels:
    app.kubernetes.io/name: {{.Name}}
    app.kubernetes.io/component: server
spec:
  replicas: {{.Replicas}}
  serviceName: {{.Name}}-replicas
  # the pods are alike: started and stopped together, not in order
  podManagementPolicy: Parallel
  # a rolling restart stops one pod at a time and waits for its successor
  # to be ready; meanwhile the router sends its tenants to the next pod
  updateStrategy:
    type: RollingUpdate
  selector:
    matchLabels:
      app.kubernetes.io/name: {{.Name}}
      app.kubernetes.io/component: server
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{.Name}}
        app.kubernetes.io/component: server
    spec:
      # SIGTERM: aiod refuses new connections and serves the open ones for
      # --drain-delay (its readiness fails: its name leaves the DNS),
      # then waits up to --drain-timeout for the calls in flight; the grace
      # covers both
      terminationGracePeriodSeconds: 25
      containers:
        - name: aiod
          image: "{{.Image}}"
          args: ["start", "--host", "0.0.0.0", "--port", "{{.Port}}", "--state-key-file", "/etc/aiod/state/state.key", "--replica-id", "$(POD_NAME)", "--drain-delay", "5s", "--drain-timeout", "15s"]
          env:
            - name: POD_NAME
              valueFrom:
                fieldRef:
                  fieldPath: metadata.name
            - name: AIO_API_KEY
              valueFrom:
                secretKeyRef:
                  name: {{.Name}}-api-key
                  key: api-key
          ports:
            - name: mcp
              containerPort: {{.Port}}
          readinessProbe:
            httpGet:
              path: /health
              port: mcp
            periodSeconds: 5
          livenessProbe:
            httpGet:
              path: /health
              port: mcp
            periodSeconds: 10
          volumeMounts:
            - name: state-key
              mountPath: /etc/aiod/state
              readOnly: true
      volumes:
        - name: state-key
          secret:
            secretName: {{.Name}}-state-key
            defaultMode: 0400
---
apiVersion: v1
kind: Service
metadata:
  name: {{.Name}}-replicas
  namespace: {{.Namespace}}
  labels:
    app.kubernetes.io/name: {{.Name}}
spec:
  clusterIP: None
  selector:
    app.kubernetes.io/name: {{.Name}}
    app.kubernetes.io/component: server
  ports:
    - name: mcp
      port: {{.Port}}
      targetPort: mcp
---
# voluntary disruptions (a node drained) take one replica at a time
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{.Name}}
  namespace: {{.Namespace}}
  labels:
    app.kubernetes.io/name: {{.Name}}
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: {{.Name}}
      app.kubernetes.io/component: server
{{end}}

{{- define "router.yaml" -}}
# The router: nginx in front of the aiod pods, and the Service clients reach.
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{.Name}}-router
  namespace: {{.Namespace}}
  labels:
    app.kubernetes.io/name: {{.Name}}
data:
  nginx.conf: |
{{.RouterCfg}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{.Name}}-router
  namespace: {{.Namespace}}
  labels:
    app.kubernetes.io/name: {{.Name}}
    app.kubernetes.io/component: router
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: {{.Name}}
      app.kubernetes.io/component: router
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{.Name}}
        app.kubernetes.io/component: router
    spec:
      containers:
        - name: nginx
          image: "{{.RouterImage}}"
          ports:
            - name: http
              containerPort: {{.Port}}
          readinessProbe:
            httpGet:
              path: /router-health
              port: http
          volumeMounts:
            - name: config
              mountPath: /etc/nginx/nginx.conf
              subPath: nginx.conf
              readOnly: true
      volumes:
        - name: config
          configMap:
            name: {{.Name}}-router
---
apiVersion: v1
kind: Service
metadata:
  name: {{.Name}}
  namespace: {{.Namespace}}
  labels:
    app.kubernetes.io/name: {{.Name}}
spec:
  selector:
    app.kubernetes.io/name: {{.Name}}
    app.kubernetes.io/component: router
  ports:
    - name: http
      port: 80
      targetPort: http
{{end}}
`))

// routerTmpl is the router's nginx.conf: names resolved when used, through
// the cluster's DNS, so that pods come and go without a reload. A tenant
// (its credential) is hashed to one pod of the ring, a session or a task to
// the pod whose name starts its id; only the StatefulSet's pods are
// listed, so a forged id reaches no other address. A pod that cannot be
// reached (nothing sent to it) hands the request to the next pod of the
// ring, then to any ready pod.
var routerTmpl = template.Must(template.New("router").Parse(`# written by aiod deploy kubernetes
worker_processes auto;
pid /tmp/nginx.pid;
error_log /dev/stderr notice;

events {
    worker_connections 1024;
}

http {
    access_log /dev/stdout;
    client_body_temp_path /tmp/client_body;
    proxy_temp_path /tmp/proxy;
    fastcgi_temp_path /tmp/fastcgi;
    uwsgi_temp_path /tmp/uwsgi;
    scgi_temp_path /tmp/scgi;

    resolver kube-dns.kube-system.svc.cluster.local valid=5s;

    # a tenant's pod: a hash of its credential over the ring of pods,
    # which keep their names across restarts (the StatefulSet)
    split_clients "$http_authorization" $aiod_tenant_pod {
{{- range .Pods}}
        {{if .Share}}{{.Share}}{{else}}*{{end}} {{.Name}};
{{- end}}
    }
    # no credential: any pod (the headless Service's addresses)
    map $http_authorization $aiod_hashed_pod {
        "" "";
        default $aiod_tenant_pod;
    }
    # a task's requests carry its id in Mcp-Name, and the id starts with
    # the name of the pod running the task
    map "$http_mcp_method $http_mcp_name" $aiod_task_pod {
        default $aiod_hashed_pod;
{{- range .Pods}}
        "~^tasks/(get|update|cancel) {{.Name}}\." {{.Name}};
{{- end}}
    }
    # a legacy session's id starts with the name of the pod that made it
    map $http_mcp_session_id $aiod_pod {
        default $aiod_task_pod;
{{- range .Pods}}
        "~^{{.Name}}\." {{.Name}};
{{- end}}
    }
    map $aiod_pod $aiod_backend {
        "" {{.Name}}-replicas.{{.Namespace}}.svc.cluster.local:{{.Port}};
{{- range .Pods}}
        {{.Name}} {{.Name}}.{{$.Name}}-replicas.{{$.Namespace}}.svc.cluster.local:{{$.Port}};
{{- end}}
    }
    # the next pod on the ring, while a tenant's pod is down
    map $aiod_pod $aiod_next_backend {
        default {{.Name}}-replicas.{{.Namespace}}.svc.cluster.local:{{.Port}};
{{- range .Pods}}
        {{.Name}} {{.Next}}.{{$.Name}}-replicas.{{$.Namespace}}.svc.cluster.local:{{$.Port}};
{{- end}}
    }
    map $aiod_pod $aiod_any_backend {
        default {{.Name}}-replicas.{{.Namespace}}.svc.cluster.local:{{.Port}};
    }

    server {
        listen {{.Port}};
        client_max_body_size {{.MaxBody}};
        # the whole body is read before a pod is tried, so that a request
        # handed to the next pod carries it again
        proxy_request_buffering on;
        client_body_buffer_size 1m;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $http_host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
        # SSE: every event as it comes, streams open for long
        proxy_buffering off;
        proxy_cache off;
        proxy_read_timeout 1h;
        proxy_send_timeout 1h;
        recursive_error_pages on;

        location = /router-health {
            access_log off;
            return 200 "ok\n";
        }

        location / {
            proxy_pass http://$aiod_backend;
            error_page 502 504 = @aiod_next;
        }

        # nginx could not reach the pod, or lost it (aiod's own answers
        # pass through: no proxy_intercept_errors): a session is gone with
        # it; a request the pod received (bytes sent) is never sent to
        # another (a tool call would run twice); any other goes to the
        # next pod on the ring, then to any ready one
        location @aiod_next {
            default_type application/json;
            if ($http_mcp_session_id != "") {
                return 404 '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"session not found: its pod is gone; initialize a new one"}}';
            }
            if ($upstream_bytes_sent ~ "[1-9]") {
                return 502;
            }
            proxy_pass http://$aiod_next_backend;
            error_page 502 504 = @aiod_any;
        }

        location @aiod_any {
            if ($upstream_bytes_sent ~ "[1-9]") {
                return 502;
            }
            proxy_pass http://$aiod_any_backend;
        }
    }
}
`))
