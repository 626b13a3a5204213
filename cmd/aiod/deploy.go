package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/deploy"
)

// replicaFlags are the flags of one replica behind a load balancer: the
// shared state key file and the replica id (aiod deploy prints them).
func (s *startFlags) replicaFlags(c *host.Config) {
	s.str(&c.StateKeyFile, "state-key-file", "AIO_STATE_KEY_FILE", "", "file of the keys MRTR requestState is sealed with, the same on every replica (one base64 key a line, at least 32 bytes; the first seals, all open; reread on SIGHUP); unset: a key of this process only")
	s.str(&c.ReplicaID, "replica-id", "AIO_REPLICA_ID", "", "this replica's id, the start of every legacy Mcp-Session-Id the load balancer routes on (letters, digits, '_', '-', or an IP address); unset: untagged ids")
	s.str(&c.Store, "store", "AIO_STORE", "", "the store every replica shares, redis://[user:password@]host:port[/db] (rediss:// for TLS): plugin state, task records and one calls_per_minute bucket per tenant; unset: a file under --data-dir, else memory (lost at exit)")
	s.duration(&c.DrainDelay, "drain-delay", "AIO_DRAIN_DELAY", 0, "on SIGTERM, keep serving this long with /health answering 503 (draining) so the load balancer stops sending requests first, then stop accepting; 0: stop at once")
	s.duration(&c.DrainTimeout, "drain-timeout", "AIO_DRAIN_TIMEOUT", host.DefaultDrainTimeout, "on SIGTERM, the longest aiod waits for the calls in flight once it stops accepting")
}

const deployUsage = `usage:
  aiod deploy nginx --replica HOST:PORT [--replica [ID=]HOST:PORT ...] --listen HOST:PORT --out DIR
      a self-contained nginx.conf in DIR (run: nginx -p DIR -c DIR/nginx.conf) and DIR/state.key
  aiod deploy kubernetes --replicas N --image IMAGE --out DIR [--namespace NS] [--name NAME] [--router-image IMAGE]
      the aiod StatefulSet, its headless Service, the nginx router (a tenant to its pod by a hash of its
      credential) and the Secrets, in DIR
`

// deployCmd is `aiod deploy nginx|kubernetes`: the artifacts of several
// replicas behind a load balancer (host/deploy), and what to set on each.
func deployCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "nginx" && args[0] != "kubernetes") {
		fmt.Fprint(stderr, deployUsage)
		return 2
	}
	fs := flag.NewFlagSet("aiod deploy "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory to write into (made if missing; an existing state.key is kept)")
	var run func() (string, error)
	switch args[0] {
	case "nginx":
		var reps listFlag
		fs.Var(&reps, "replica", "an aiod replica, HOST:PORT or ID=HOST:PORT (ids default to r1, r2, ...); once for each")
		listen := fs.String("listen", "127.0.0.1:8080", "HOST:PORT nginx listens on")
		run = func() (string, error) {
			r, err := deploy.ParseReplicas(reps)
			if err != nil {
				return "", err
			}
			return deploy.WriteNginx(*out, deploy.Nginx{Listen: *listen, Replicas: r}, nil)
		}
	case "kubernetes":
		var k deploy.Kubernetes
		fs.IntVar(&k.Replicas, "replicas", 2, "aiod pods")
		fs.StringVar(&k.Image, "image", "", "the aiod image")
		fs.StringVar(&k.Namespace, "namespace", "default", "namespace of every object")
		fs.StringVar(&k.Name, "name", "aiod", "name of the objects (and their app.kubernetes.io/name label)")
		fs.StringVar(&k.RouterImage, "router-image", deploy.DefaultRouterImage, "the router's nginx image")
		run = func() (string, error) { return deploy.WriteKubernetes(*out, k, nil) }
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || *out == "" {
		fmt.Fprintf(stderr, "aiod deploy %s: --out DIR is required and takes no arguments besides flags\n%s", args[0], deployUsage)
		return 2
	}
	msg, err := run()
	if err != nil {
		fmt.Fprintf(stderr, "aiod deploy %s: %v\n", args[0], err)
		return 1
	}
	fmt.Fprint(stdout, msg)
	return 0
}
