package deploy

import (
	"bytes"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/aiodhq/aiod/host/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./host/deploy -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the generated text (go test ./host/deploy -update rewrites it):\n%s", path, got)
	}
}

func TestNginxGolden(t *testing.T) {
	tests := []struct {
		name     string
		listen   string
		replicas []string
		want     []string // in the config besides the golden file's check
	}{
		{"two", "127.0.0.1:8080", []string{"127.0.0.1:18101", "127.0.0.1:18102"},
			[]string{`"~^r1\." aiod_r1;`, `"~^r2\." aiod_r2;`, "server 127.0.0.1:18101;\n        server 127.0.0.1:18102;"}},
		{"named-ipv6", "[::]:80", []string{"east=10.0.0.1:8080", "west=[fd00::2]:8080", "10.0.0.3:8080"},
			[]string{`"~^east\." aiod_east;`, "server [fd00::2]:8080;", `"~^r3\." aiod_r3;`, "listen [::]:80;"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reps, err := ParseReplicas(tt.replicas)
			if err != nil {
				t.Fatal(err)
			}
			conf, err := Nginx{Listen: tt.listen, Replicas: reps}.Config()
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range append(tt.want, "proxy_set_header Host $http_host;", "proxy_buffering off;", "proxy_read_timeout 1h;", "pid nginx.pid;") {
				if !strings.Contains(string(conf), w) {
					t.Errorf("config lacks %q", w)
				}
			}
			golden(t, "nginx-"+tt.name+".conf", conf)
		})
	}
}

// TestNginxTagsMatchReplicas: each replica's map entry matches the session
// ids that replica makes (the tag mcp puts first), and no other's.
func TestNginxTagsMatchReplicas(t *testing.T) {
	reps, _ := ParseReplicas([]string{"r1=127.0.0.1:1", "r10=127.0.0.1:2"})
	conf, _ := Nginx{Listen: "127.0.0.1:3", Replicas: reps}.Config()
	for _, r := range reps {
		tag, _ := mcp.ReplicaTag(r.ID)
		if !strings.Contains(string(conf), `"~^`+tag+`\." aiod_`+r.ID+";") {
			t.Errorf("no map entry for %s routing %q", r.ID, tag+".")
		}
	}
	// r1's pattern must not take r10's sessions: the "." ends the tag
	if strings.Contains(string(conf), `"~^r1" `) {
		t.Error("r1's pattern has no '.': it would match r10's ids")
	}
}

func TestParseReplicasErrors(t *testing.T) {
	tests := []struct {
		args []string
		err  string
	}{
		{nil, "no replica"},
		{[]string{"127.0.0.1"}, "want HOST:PORT"},
		{[]string{"127.0.0.1:0"}, "port not in"},
		{[]string{":8080"}, "no host"},
		{[]string{"a b=127.0.0.1:1"}, "replica id"},
		{[]string{"10.0.0.1=127.0.0.1:1"}, "must be its own tag"},
		{[]string{"127.0.0.1:1", "127.0.0.1:1"}, "given twice"},
		{[]string{"x=127.0.0.1:1", "x=127.0.0.1:2"}, "given twice"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, ","), func(t *testing.T) {
			if _, err := ParseReplicas(tt.args); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want one with %q", err, tt.err)
			}
		})
	}
	if _, err := (Nginx{Listen: "nowhere", Replicas: []Replica{{"r1", "127.0.0.1:1"}}}).Config(); err == nil {
		t.Fatal("a --listen without a port accepted")
	}
}

// fixedKey is a state key file's content for the golden files.
var fixedKey = []byte("# test\n" + strings.Repeat("A", 43) + "=\n")

func TestKubernetesGolden(t *testing.T) {
	tests := []struct {
		name string
		k    Kubernetes
	}{
		{"default", Kubernetes{Replicas: 3, Image: "registry.example/aiod:0.2.0"}},
		{"named", Kubernetes{Replicas: 2, Image: "aiod:dev", Namespace: "mcp", Name: "tools", RouterImage: "nginx:1.22"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := tt.k.Files(fixedKey, "aiod_test-key")
			if err != nil {
				t.Fatal(err)
			}
			names := make([]string, 0, len(files))
			for n := range files {
				names = append(names, n)
			}
			sort.Strings(names)
			if strings.Join(names, " ") != "aiod.yaml router.yaml secret.yaml" {
				t.Fatalf("files %v", names)
			}
			k, _ := tt.k.withDefaults()
			objs := map[string]map[string]any{}
			for _, n := range names {
				golden(t, "k8s-"+tt.name+"-"+n, files[n])
				for _, o := range parseYAML(t, n, files[n]) {
					md, _ := o["metadata"].(map[string]any)
					if md["namespace"] != k.Namespace {
						t.Errorf("%s: %s %v in namespace %v", n, o["kind"], md["name"], md["namespace"])
					}
					objs[o["kind"].(string)+"/"+md["name"].(string)] = o
				}
			}
			checkKubernetes(t, k, objs)
		})
	}
}

// parseYAML parses every document of a manifest file.
func parseYAML(t *testing.T, name string, b []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []map[string]any
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s does not parse as YAML: %v", name, err)
		}
		if o["apiVersion"] == nil || o["kind"] == nil {
			t.Fatalf("%s: a document without apiVersion or kind: %v", name, o)
		}
		out = append(out, o)
	}
}

// checkKubernetes follows the objects' references: the Services select the
// pods they serve, the aiod pods mount the state key Secret, the router
// mounts its ConfigMap, whose nginx.conf routes to the headless Service.
func checkKubernetes(t *testing.T, k Kubernetes, objs map[string]map[string]any) {
	t.Helper()
	get := func(o any, path ...any) any {
		for _, p := range path {
			switch p := p.(type) {
			case string:
				m, _ := o.(map[string]any)
				o = m[p]
			case int:
				l, _ := o.([]any)
				if p >= len(l) {
					return nil
				}
				o = l[p]
			}
		}
		return o
	}
	want := []string{"Secret/" + k.Name + "-state-key", "Secret/" + k.Name + "-api-key", "StatefulSet/" + k.Name, "Service/" + k.Name + "-replicas",
		"ConfigMap/" + k.Name + "-router", "Deployment/" + k.Name + "-router", "Service/" + k.Name, "PodDisruptionBudget/" + k.Name}
	for _, w := range want {
		if objs[w] == nil {
			t.Fatalf("no %s among %d objects", w, len(objs))
		}
	}
	if len(objs) != len(want) {
		t.Errorf("%d objects, want %d", len(objs), len(want))
	}
	dep, router := objs["StatefulSet/"+k.Name], objs["Deployment/"+k.Name+"-router"]
	if get(dep, "spec", "replicas") != k.Replicas {
		t.Errorf("replicas %v, want %d", get(dep, "spec", "replicas"), k.Replicas)
	}
	if get(dep, "spec", "template", "spec", "containers", 0, "image") != k.Image {
		t.Errorf("image %v", get(dep, "spec", "template", "spec", "containers", 0, "image"))
	}
	args := get(dep, "spec", "template", "spec", "containers", 0, "args").([]any)
	if !strings.Contains(fmtList(args), "--state-key-file /etc/aiod/state/state.key --replica-id $(POD_NAME)") {
		t.Errorf("aiod args %v", args)
	}
	// a rolling restart loses no call: aiod drains on SIGTERM within the
	// pod's grace, a new pod is up before an old one stops, and a node
	// drain takes one replica at a time
	if !strings.Contains(fmtList(args), "--drain-delay 5s --drain-timeout 15s") {
		t.Errorf("aiod args %v: no drain", args)
	}
	if g, _ := get(dep, "spec", "template", "spec", "terminationGracePeriodSeconds").(int); g < 5+15 {
		t.Errorf("terminationGracePeriodSeconds %v, less than the drain delay and timeout", g)
	}
	// the pods keep their names (the router's ring), named in DNS by the
	// headless Service, and start together
	if get(dep, "spec", "serviceName") != k.Name+"-replicas" || get(dep, "spec", "podManagementPolicy") != "Parallel" ||
		get(dep, "spec", "updateStrategy", "type") != "RollingUpdate" {
		t.Errorf("StatefulSet spec %v", get(dep, "spec"))
	}
	podName := false
	for _, e := range get(dep, "spec", "template", "spec", "containers", 0, "env").([]any) {
		podName = podName || (get(e, "name") == "POD_NAME" && get(e, "valueFrom", "fieldRef", "fieldPath") == "metadata.name")
	}
	if !podName {
		t.Error("no POD_NAME from metadata.name for --replica-id")
	}
	pdb := objs["PodDisruptionBudget/"+k.Name]
	if get(pdb, "spec", "maxUnavailable") != 1 || get(pdb, "spec", "selector", "matchLabels", "app.kubernetes.io/component") != "server" {
		t.Errorf("PodDisruptionBudget %v", pdb)
	}
	if get(dep, "spec", "template", "spec", "volumes", 0, "secret", "secretName") != k.Name+"-state-key" {
		t.Error("the aiod pods do not mount the state key Secret")
	}
	if get(objs["Service/"+k.Name+"-replicas"], "spec", "clusterIP") != "None" {
		t.Error("the replicas Service is not headless")
	}
	for svc, d := range map[string]map[string]any{k.Name + "-replicas": dep, k.Name: router} {
		sel := get(objs["Service/"+svc], "spec", "selector").(map[string]any)
		labels := get(d, "spec", "template", "metadata", "labels").(map[string]any)
		for key, v := range sel {
			if labels[key] != v {
				t.Errorf("Service %s selects %s=%v, its pods have %v", svc, key, v, labels[key])
			}
		}
	}
	if get(router, "spec", "template", "spec", "volumes", 0, "configMap", "name") != k.Name+"-router" {
		t.Error("the router does not mount its ConfigMap")
	}
	conf, _ := get(objs["ConfigMap/"+k.Name+"-router"], "data", "nginx.conf").(string)
	last := fmt.Sprintf("%s-%d", k.Name, k.Replicas-1)
	for _, w := range []string{"default " + k.Name + "-replicas." + k.Namespace + ".svc.cluster.local:8080;",
		k.Name + "-0 " + k.Name + "-0." + k.Name + "-replicas." + k.Namespace + ".svc.cluster.local:8080;",
		last + " " + k.Name + "-0." + k.Name + "-replicas." + k.Namespace + ".svc.cluster.local:8080;", // the ring closes
		`split_clients "$http_authorization" $aiod_tenant_pod {`, "* " + last + ";", "proxy_set_header Host $http_host;"} {
		if !strings.Contains(conf, w) {
			t.Errorf("router nginx.conf lacks %q:\n%s", w, conf)
		}
	}
	sec, _ := get(objs["Secret/"+k.Name+"-state-key"], "data", "state.key").(string)
	if sec == "" {
		t.Fatal("the Secret has no state.key")
	}
	for _, e := range get(dep, "spec", "template", "spec", "containers", 0, "env").([]any) {
		if get(e, "name") == "AIO_API_KEY" && get(e, "valueFrom", "secretKeyRef", "name") != k.Name+"-api-key" {
			t.Errorf("AIO_API_KEY comes from %v", get(e, "valueFrom"))
		}
	}
	if ak, _ := get(objs["Secret/"+k.Name+"-api-key"], "data", "api-key").(string); ak != b64([]byte("aiod_test-key")) {
		t.Errorf("api-key Secret holds %q", ak)
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func fmtList(l []any) string {
	var s []string
	for _, v := range l {
		s = append(s, v.(string))
	}
	return strings.Join(s, " ")
}

// TestRingShares: the router's shares are each pod's equal part, in
// hundredths of a percent, leaving the last pod the rest (never a share
// of 0, which nginx refuses, nor a sum over 100%).
func TestRingShares(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 100, MaxReplicas} {
		pods := ring("aiod", n)
		sum := 0.0
		for i, p := range pods {
			if p.Next != fmt.Sprintf("aiod-%d", (i+1)%n) {
				t.Fatalf("n=%d: pod %d's next is %s", n, i, p.Next)
			}
			if i == n-1 {
				if p.Share != "" {
					t.Fatalf("n=%d: the last pod has a share %q, want the rest", n, p.Share)
				}
				continue
			}
			var v float64
			if _, err := fmt.Sscanf(p.Share, "%g%%", &v); err != nil || v <= 0 {
				t.Fatalf("n=%d: share %q", n, p.Share)
			}
			sum += v
		}
		if sum >= 100 {
			t.Fatalf("n=%d: shares sum to %g%%, leaving the last pod nothing", n, sum)
		}
	}
}

func TestKubernetesErrors(t *testing.T) {
	tests := []struct {
		name string
		k    Kubernetes
		err  string
	}{
		{"no replicas", Kubernetes{Image: "aiod:1"}, "--replicas 0"},
		{"too many replicas", Kubernetes{Replicas: MaxReplicas + 1, Image: "aiod:1"}, "--replicas 1001: 1 to 1000"},
		{"no image", Kubernetes{Replicas: 1}, "--image"},
		{"bad namespace", Kubernetes{Replicas: 1, Image: "aiod:1", Namespace: "Prod"}, "--namespace"},
		{"bad name", Kubernetes{Replicas: 1, Image: "aiod:1", Name: "a_b"}, "--name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.k.Files(fixedKey, "aiod_test-key"); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want one with %q", err, tt.err)
			}
		})
	}
}

// TestWriteKeepsStateKey: the generators write a state key the replicas
// can read, and a second run keeps it (the replicas already hold it); a
// state key file that does not parse is refused, not replaced.
func TestWriteKeepsStateKey(t *testing.T) {
	dir := t.TempDir()
	reps, _ := ParseReplicas([]string{"127.0.0.1:18101", "127.0.0.1:18102"})
	msg, err := WriteNginx(dir, Nginx{Listen: "127.0.0.1:8080", Replicas: reps}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"nginx -p " + dir + " -c " + dir + "/nginx.conf",
		"aiod start --host 127.0.0.1 --port 18102 --state-key-file " + dir + "/state.key --drain-delay 2s --replica-id r2"} {
		if !strings.Contains(msg, w) {
			t.Errorf("instructions lack %q:\n%s", w, msg)
		}
	}
	first, err := mcp.ReadStateKeyFile(filepath.Join(dir, StateKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(dir, StateKeyFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("state key mode %v, want 0600", st.Mode().Perm())
	}
	if st, err := os.Stat(filepath.Join(dir, "logs")); err != nil || !st.IsDir() {
		t.Errorf("no logs directory: %v", err)
	}
	if _, err := WriteKubernetes(dir, Kubernetes{Replicas: 2, Image: "aiod:1"}, nil); err != nil {
		t.Fatal(err)
	}
	again, _ := mcp.ReadStateKeyFile(filepath.Join(dir, StateKeyFile))
	if !bytes.Equal(first[0], again[0]) {
		t.Fatal("a second run replaced the state key")
	}
	sec, _ := os.ReadFile(filepath.Join(dir, "secret.yaml"))
	raw, _ := os.ReadFile(filepath.Join(dir, StateKeyFile))
	apiKey, _ := os.ReadFile(filepath.Join(dir, APIKeyFile))
	docs := parseYAML(t, "secret.yaml", sec)
	if v := docs[0]["data"].(map[string]any)["state.key"]; v != b64(raw) {
		t.Error("the Secret does not hold dir/state.key")
	}
	if k := strings.TrimSpace(string(apiKey)); !strings.HasPrefix(k, "aiod_") || len(k) != 48 || docs[1]["data"].(map[string]any)["api-key"] != b64([]byte(k)) {
		t.Errorf("api.key %q is not a fresh aiod key in the Secret", apiKey)
	}
	if _, err := WriteKubernetes(dir, Kubernetes{Replicas: 2, Image: "aiod:1"}, nil); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, APIKeyFile)); !bytes.Equal(again, apiKey) {
		t.Error("a second run replaced the API key")
	}
	if err := os.WriteFile(filepath.Join(dir, StateKeyFile), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteNginx(dir, Nginx{Listen: "127.0.0.1:8080", Replicas: reps}, nil); err == nil {
		t.Fatal("a state key file that does not parse was accepted")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, StateKeyFile)); string(b) != "short\n" {
		t.Fatal("a bad state key file was replaced")
	}
}
