package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Run is the daemon: it listens on Config.Host:Config.Port, serves MCP, and
// until ctx ends or SIGINT/SIGTERM arrives (then it shuts down gracefully;
// a second signal kills the process) reloads the plugins on SIGHUP. With
// Config.PprofAddr it also serves Go's profiler on that loopback address.
// Run does not Close the host.
func (h *Host) Run(ctx context.Context) error {
	// Signals are watched before the port answers, so that a client that
	// has seen the server up can rely on SIGHUP and SIGTERM being handled.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // the next SIGINT/SIGTERM kills the process
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reloads := make(chan struct{})
	go func() {
		defer close(reloads)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				h.log.Info("SIGHUP: reloading plugins")
				h.Reload(ctx)
			}
		}
	}()
	defer func() {
		cancel()
		<-reloads
	}()

	if h.pprofAddr != "" {
		shutdown, err := h.servePprof(h.pprofAddr)
		if err != nil {
			return err
		}
		defer shutdown()
	}
	ln, err := net.Listen("tcp", h.Addr())
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return h.Serve(ctx, ln)
}

// servePprof serves Go's profiler on addr (loopback, checked by New) on a
// mux of its own, and returns the function that stops it.
func (h *Host) servePprof(addr string) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("profiler: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Warn("profiler stopped", "err", err)
		}
	}()
	h.log.Info("profiler listening", "addr", ln.Addr().String())
	return func() {
		srv.Close()
		<-done
	}, nil
}
