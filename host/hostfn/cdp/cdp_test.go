package cdp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto"

	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/sdk/abi"
)

func TestCDPMethodAllowed(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		newTgt   bool
		method   string
		want     string // "" allowed, else a part of the denial
	}{
		{[]string{"Page.*"}, false, "Page.navigate", ""},
		{[]string{"Page.*"}, false, "Runtime.evaluate", "Runtime.evaluate is outside the plugin's cdp scope"},
		{[]string{"Input.dispatch*"}, false, "Input.dispatchKeyEvent", ""},
		{[]string{"Input.dispatch*"}, false, "Input.insertText", "outside"},
		{nil, false, "Page.navigate", "outside"},
		{[]string{"*"}, false, "Page.navigate", ""},
		// Sensitive domains and methods: only when named.
		{[]string{"*"}, false, "Browser.getVersion", "Browser.getVersion must be named"},
		{[]string{"*"}, false, "Storage.clearDataForOrigin", "must be named"},
		{[]string{"Browser.*"}, false, "Browser.getVersion", ""},
		{[]string{"Browser.setPermission"}, false, "Browser.setPermission", ""},
		{[]string{"Network.*"}, false, "Network.enable", ""},
		{[]string{"Network.*"}, false, "Network.setCookies", "Network.setCookies must be named"},
		{[]string{"Network.setCookies"}, false, "Network.setCookies", ""},
		// Targets: new_targets, and never the session-making ones.
		{[]string{"Target.*"}, false, "Target.getTargets", ""},
		{[]string{"Target.*"}, false, "Target.createTarget", "has no new_targets"},
		{[]string{"Target.*"}, true, "Target.createTarget", ""},
		{[]string{"Target.*"}, true, "Target.attachToTarget", "not available through aiod:cdp.call"},
		{[]string{"*", "Browser.*"}, true, "Browser.close", "not available through aiod:cdp.call"},
	} {
		g := &caps.Grant{CDPMethods: tc.patterns, CDPNewTargets: tc.newTgt}
		err := methodAllowed(g, tc.method)
		var he *hostfn.Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v %s: %v, want allowed", tc.patterns, tc.method, err)
		case tc.want != "" && (!errors.As(err, &he) || he.Code != abi.Denied || !strings.Contains(he.Message, tc.want)):
			t.Errorf("%v %s: %v, want denied %q", tc.patterns, tc.method, err, tc.want)
		}
	}
}

func TestCDPError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code abi.Code
		msg  string
	}{
		{&cdproto.Error{Code: -32601, Message: "'X.y' wasn't found"}, abi.Invalid, "X.y: the browser answered: 'X.y' wasn't found"},
		{&cdproto.Error{Code: -32000, Message: "Cannot navigate"}, abi.IO, "X.y: the browser answered: Cannot navigate"},
		{fmt.Errorf("wait: %w", context.DeadlineExceeded), abi.Timeout, "X.y: the browser did not answer in time"},
		{fmt.Errorf("%w: the page crashed", browser.ErrTargetCrashed), abi.Unavailable, "the page crashed"},
		{fmt.Errorf("%w: gone", browser.ErrTargetClosed), abi.NotFound, "gone"},
		{fmt.Errorf("%w: lost", browser.ErrUnavailable), abi.Unavailable, "lost"},
	} {
		var he *hostfn.Error
		if err := cdpError("X.y", tc.err); !errors.As(err, &he) || he.Code != tc.code || !strings.Contains(he.Message, tc.msg) {
			t.Errorf("%v: %v, want %s %q", tc.err, err, tc.code, tc.msg)
		}
	}
}

// TestCDPNoBrowser: with no browser every function is unavailable, and a
// call without the grant is denied.
func TestCDPNoBrowser(t *testing.T) {
	f := New(nil)
	_, err := f.targets(context.Background(), &hostfn.Call{}, nil)
	var he *hostfn.Error
	if !errors.As(err, &he) || he.Code != abi.Denied {
		t.Errorf("no grant: %v", err)
	}
	if _, err := f.conn(context.Background()); !errors.As(err, &he) || he.Code != abi.Unavailable || !strings.Contains(he.Message, "off") {
		t.Errorf("no browser: %v", err)
	}
}
