package server

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/aiodhq/aiod/host/doctor"
)

// Sandbox is what GET /v2/sandbox and the per-domain part of GET
// /v1/capabilities report (spec/capabilities.md).
type Sandbox struct {
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
	sb := s.opts.Sandbox
	if sb == nil || sb.Doctor == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 5*time.Second)
	defer cancel()
	out := sb.Doctor.Report(ctx, c.Query("refresh") == "true").DomainsMap()
	if sb.Browser != nil {
		out["browser"] = sb.Browser(ctx)
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

// routeSandbox serves GET /v2/sandbox: identity, version, workspace and
// capabilities as one JSON object.
func (s *Server) routeSandbox() {
	sb := s.opts.Sandbox
	if sb == nil {
		return
	}
	s.app.Get("/v2/sandbox", func(c *fiber.Ctx) error {
		caps := s.domains(c)
		if caps == nil {
			caps = map[string]any{}
		}
		return c.JSON(map[string]any{"identity": sb.Identity, "version": sb.Version,
			"workspace_dir": sb.WorkspaceDir, "capabilities": caps})
	})
}
