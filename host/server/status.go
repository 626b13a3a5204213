package server

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/aiodhq/aiod/host/doctor"
)

// Status is the host's status report: what GET /v2/sandbox (the route's
// name is the protocol's) and the per-domain part of GET /v1/capabilities
// serve (spec/capabilities.md).
type Status struct {
	// Doctor probes the planes (cached briefly; ?refresh=true probes
	// again).
	Doctor *doctor.Doctor
	// Identity describes this server (name, hostname, os, arch, user,
	// home_dir, ...).
	Identity map[string]any
	// Version is aiod's version; WorkspaceDir the directory file tools
	// and processes work in.
	Version      string
	WorkspaceDir string
	// Browser, when set, is the host's own view of its browser plane
	// (the connection it keeps), which replaces the probe's "browser".
	Browser func(ctx context.Context) any
}

// domains is the per-domain report: files, exec, code_interpreter,
// browser, computer.
func (s *Server) domains(c *fiber.Ctx) map[string]any {
	st := s.opts.Status
	if st == nil || st.Doctor == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 5*time.Second)
	defer cancel()
	out := st.Doctor.Report(ctx, c.Query("refresh") == "true").DomainsMap()
	if st.Browser != nil {
		out["browser"] = st.Browser(ctx)
	}
	return out
}

// addDomains puts the per-domain report into a /v1/capabilities report,
// beside (never over) what the host reports itself.
func (s *Server) addDomains(c *fiber.Ctx, data any) {
	m, ok := data.(map[string]any)
	if !ok {
		return
	}
	for k, v := range s.domains(c) {
		if _, taken := m[k]; !taken {
			m[k] = v
		}
	}
}

// routeStatus serves GET /v2/sandbox: identity, version, workspace and
// capabilities as one JSON object.
func (s *Server) routeStatus() {
	st := s.opts.Status
	if st == nil {
		return
	}
	s.app.Get("/v2/sandbox", func(c *fiber.Ctx) error {
		caps := s.domains(c)
		if caps == nil {
			caps = map[string]any{}
		}
		return c.JSON(map[string]any{"identity": st.Identity, "version": st.Version,
			"workspace_dir": st.WorkspaceDir, "capabilities": caps})
	})
}
