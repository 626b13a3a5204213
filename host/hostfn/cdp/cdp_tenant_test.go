package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/sdk/abi"
)

// TestCDPTenantContexts: each tenant gets its own browser context: it
// sees only its own tabs, another tenant's target is unknown to it, a
// cookie one sets is not the other's, browser-level calls that reach
// beyond the context are denied, a page it opens lands in its context,
// and a tenant without the browser is denied everything.
func TestCDPTenantContexts(t *testing.T) {
	if testing.Short() {
		t.Skip("launches Chromium: make test runs it, make test-short does not")
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Fatalf("chromium is not installed (.ci/run installs it): %v", err)
	}
	b, err := browser.New(browser.Config{Mode: browser.Launch, Viewport: "800x600", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	f := New(b)
	f.SetOwnerPolicy(func(owner string) bool { return owner != "carol" })
	scope := &abi.CDPScope{Methods: []string{"Page.*", "Runtime.*", "Target.*", "Browser.getVersion", "Network.setCookie", "Network.getCookies"}, NewTargets: true}
	g := (&caps.Policy{Default: &abi.Capabilities{CDP: scope}}).Allow(&abi.Manifest{Name: "p", Capabilities: abi.Capabilities{CDP: scope}}, caps.Env{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	as := func(owner string) *hostfn.Call {
		return &hostfn.Call{Plugin: "p", Owner: owner, Grant: g, Log: slog.Default()}
	}
	targets := func(owner string) []string {
		t.Helper()
		r, err := f.targets(ctx, as(owner), nil)
		if err != nil {
			t.Fatalf("%s: targets: %v", owner, err)
		}
		var ids []string
		for _, x := range r.Targets {
			if x.Type == "page" {
				ids = append(ids, x.TargetID)
			}
		}
		return ids
	}
	callAs := func(owner, session, method, params string) ([]byte, error) {
		raw, _ := json.Marshal(abi.CDPCallRequest{Session: session, Method: method, Params: json.RawMessage(params)})
		return f.call(ctx, as(owner), raw)
	}
	code := func(err error) abi.Code {
		var he *hostfn.Error
		if errors.As(err, &he) {
			return he.Code
		}
		var none abi.Code
		return none
	}

	if ids := targets("alice"); len(ids) != 0 {
		t.Fatalf("alice sees %v before opening anything", ids)
	}
	aa, err := f.attach(ctx, as("alice"), &abi.CDPAttachRequest{})
	if err != nil {
		t.Fatalf("alice attach: %v", err)
	}
	ba, err := f.attach(ctx, as("bob"), &abi.CDPAttachRequest{})
	if err != nil {
		t.Fatalf("bob attach: %v", err)
	}
	if aa.TargetID == ba.TargetID {
		t.Fatal("alice and bob were given one page")
	}
	if ids := targets("alice"); len(ids) != 1 || ids[0] != aa.TargetID {
		t.Errorf("alice sees %v, want only her page %s", ids, aa.TargetID)
	}
	if _, err := f.attach(ctx, as("bob"), &abi.CDPAttachRequest{TargetID: aa.TargetID}); code(err) != abi.NotFound {
		t.Errorf("bob attaching alice's page: %v, want not found", err)
	}
	if ids := strings.Join(targets("default"), ","); !strings.Contains(ids, aa.TargetID) || !strings.Contains(ids, ba.TargetID) {
		t.Errorf("the single tenant (the operator's browser) sees %s", ids)
	}

	// cookies: alice's are not bob's
	if _, err := callAs("alice", aa.Session, "Network.setCookie", `{"name":"who","value":"alice","url":"http://tenant.test/"}`); err != nil {
		t.Fatalf("alice setCookie: %v", err)
	}
	for owner, s := range map[string]string{"alice": aa.Session, "bob": ba.Session} {
		res, err := callAs(owner, s, "Network.getCookies", `{"urls":["http://tenant.test/"]}`)
		if err != nil {
			t.Fatalf("%s getCookies: %v", owner, err)
		}
		has := strings.Contains(string(res), `"value":"alice"`)
		if has != (owner == "alice") {
			t.Errorf("%s's cookies: %s", owner, res)
		}
	}

	// browser level: confined
	if _, err := callAs("bob", "", "Target.getTargets", `{}`); code(err) != abi.Denied {
		t.Errorf("bob's browser-level Target.getTargets: %v, want denied", err)
	}
	if _, err := callAs("bob", "", "Target.closeTarget", `{"targetId":"`+aa.TargetID+`"}`); code(err) != abi.NotFound {
		t.Errorf("bob closing alice's page: %v, want not found", err)
	}
	if _, err := callAs("bob", "", "Target.createTarget", `{"url":"about:blank","newWindow":true}`); err != nil {
		t.Fatalf("bob createTarget: %v", err)
	}
	if n := len(targets("bob")); n != 2 {
		t.Errorf("bob has %d pages after opening one more, want 2 (in his context)", n)
	}
	if n := len(targets("alice")); n != 1 {
		t.Errorf("alice has %d pages after bob opened one, want 1", n)
	}
	if _, err := callAs("bob", "", "Browser.getVersion", `{}`); err != nil {
		t.Errorf("Browser.getVersion: %v", err)
	}

	// no browser for carol
	if _, err := f.targets(ctx, as("carol"), nil); code(err) != abi.Denied {
		t.Errorf("carol (browser: false) listing targets: %v, want denied", err)
	}
}
