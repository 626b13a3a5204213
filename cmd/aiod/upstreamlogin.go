package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/upstream/oauth"
)

const loginUsage = "usage: aiod upstream login NAME [--no-browser] [--callback-port N] [--scope 'A B'] [--policy FILE] [--data-dir DIR] [--upstream-key-file FILE]\n       aiod upstream logout NAME [--policy FILE] [--data-dir DIR] [--upstream-key-file FILE]"

// upstreamLoginCmd is `aiod upstream login NAME` and `aiod upstream logout
// NAME` (spec/upstream.md, "OAuth"). Exit 0: done; 1: failed; 2: usage.
func upstreamLoginCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	verb := args[0]
	s := &startFlags{fs: flag.NewFlagSet("aiod upstream "+verb, flag.ContinueOnError), env: map[string]string{}}
	s.fs.SetOutput(stderr)
	s.str(&s.cfg.PolicyFile, "policy", "AIO_POLICY", "", "the policy file naming the server in its \"upstreams\"")
	s.str(&s.cfg.DataDir, "data-dir", "AIO_DATA_DIR", "", "where the tokens are kept (<dir>/upstream-oauth), as for aiod start")
	s.str(&s.cfg.UpstreamKeyFile, "upstream-key-file", "AIO_UPSTREAM_KEY_FILE", "", "the key file the tokens are encrypted with (32 bytes, mode 0600), as for aiod start")
	noBrowser, port, scopes := false, 0, ""
	if verb == "login" {
		s.fs.BoolVar(&noBrowser, "no-browser", false, "print the URL and read the redirect URL pasted on standard input, instead of opening a browser")
		s.fs.IntVar(&port, "callback-port", 0, "the loopback redirect's port (default: any free one), for a client registered with an exact redirect URI")
		s.fs.StringVar(&scopes, "scope", "", "more scopes to ask for, space-separated, besides the policy's (or the server's)")
	}
	// NAME may come before or after the flags.
	var name string
	rest := args[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		name, rest = rest[0], rest[1:]
	}
	if err := s.parse(rest, os.LookupEnv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, loginUsage)
		return 2
	}
	if name == "" && s.fs.NArg() == 1 {
		name = s.fs.Arg(0)
	} else if s.fs.NArg() > 0 || name == "" {
		fmt.Fprintln(stderr, loginUsage)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "aiod upstream %s: %v\n", verb, err)
		return 1
	}
	entry, srv, err := host.PolicyUpstream(s.cfg.PolicyFile, name)
	if err != nil {
		return fail(err)
	}
	if entry.OAuth == nil {
		return fail(fmt.Errorf("upstream MCP server %q has no \"oauth\" in the policy: it does not log in", name))
	}
	if entry.OAuth.ClientCredentials() {
		return fail(fmt.Errorf("upstream MCP server %q uses the client_credentials grant: aiod gets its tokens itself, without a login", name))
	}
	store, err := oauth.OpenStore(s.cfg.DataDir, s.cfg.UpstreamKeyFile)
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if verb == "logout" {
		res, err := oauth.Logout(ctx, entry, oauth.NewHTTPClient(srv.RootCAs), store, os.LookupEnv)
		if err != nil {
			return fail(err)
		}
		switch {
		case res.Nothing:
			fmt.Fprintf(stdout, "%s: not logged in; nothing to do\n", name)
		case res.NoRevocation:
			fmt.Fprintf(stdout, "%s: logged out; its authorization server offers no revocation (RFC 7009), so its tokens were only forgotten here\n", name)
		default:
			fmt.Fprintf(stdout, "%s: logged out; revoked: %s\n", name, strings.Join(res.Revoked, ", "))
			for _, f := range res.Failed {
				fmt.Fprintf(stdout, "%s: revocation failed (the token was forgotten here anyway): %s\n", name, f)
			}
		}
		return 0
	}
	st, err := oauth.Login(ctx, oauth.LoginOptions{Server: entry, RootCAs: srv.RootCAs, Store: store, Lookup: os.LookupEnv,
		Open: openBrowser, NoBrowser: noBrowser, Stdin: stdin, Out: stdout, CallbackPort: port, Scopes: strings.Fields(scopes)})
	if err != nil {
		return fail(err)
	}
	refresh := "no refresh token: log in again when it expires"
	if st.Token.RefreshToken != "" {
		refresh = "refreshed by aiod while the refresh token lasts"
	}
	fmt.Fprintf(stdout, "%s: logged in at %s (client %s, %s; scopes %q); %s\n", name, st.Issuer, st.ClientID, st.Registration, strings.Join(st.Scopes, " "), refresh)
	return 0
}

// openBrowser opens url with xdg-open when the machine has it.
func openBrowser(url string) error {
	p, err := exec.LookPath("xdg-open")
	if err != nil {
		return errors.New("no xdg-open")
	}
	cmd := exec.Command(p, url)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reaped when it exits
	return nil
}
