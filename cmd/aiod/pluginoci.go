package main

// aiod plugin push, pull, sign and keygen, and add oci://: plugin
// packages as OCI artifacts, signed (spec/oci.md).

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/oci"
	"github.com/aiodhq/aiod/host/oci/ocireg"
)

// pluginPush is `aiod plugin push DIR REF`.
func pluginPush(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("push", stderr)
	client := registryFlag(fs)
	pos, err := parseArgs(fs, args, 2, 2)
	if err != nil {
		return err
	}
	dir, ref := pos[0], strings.TrimPrefix(pos[1], "oci://")
	mj, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return err
	}
	m, err := caps.ParseManifest(mj)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	mod := m.Module
	if mod == "" {
		mod = "plugin.wasm"
	}
	if mod != "plugin.wasm" {
		return fmt.Errorf("%s: module %q: a pushed package's module is plugin.wasm", dir, mod)
	}
	wasm, err := os.ReadFile(filepath.Join(dir, mod))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(wasm)
	digest := hex.EncodeToString(sum[:])
	if m.SHA256 != "" && m.SHA256 != digest {
		return fmt.Errorf("%s: module digest %s does not match the manifest's sha256 %s", dir, digest, m.SHA256)
	}
	pushed, err := client.Push(ctx, ref, mj, wasm)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed %s %s as %s\npolicy: %q: {\"oci\": %q, \"sha256\": %q}\n", m.Name, m.Version, pushed, m.Name, pushed, digest)
	return nil
}

// pluginPull is `aiod plugin pull REF [--into DIR]`.
func pluginPull(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("pull", stderr)
	client := registryFlag(fs)
	into := fs.String("into", ".", "write the package as DIR/<plugin name>")
	force := fs.Bool("force", false, "replace a package of that name already in DIR")
	var keys listFlag
	fs.Var(&keys, "key", "public key file (PEM); the package must be signed by one of them; repeatable")
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return err
	}
	_, err = pullInto(ctx, client, pos[0], *into, *force, keys, false, stdout)
	return err
}

// pullInto pulls ref into into/<name>, checking its signature against
// keyFiles when any is given; byDigest refuses a reference by tag.
func pullInto(ctx context.Context, client *ocireg.Client, ref, into string, force bool, keyFiles []string, byDigest bool, stdout io.Writer) (string, error) {
	ref = strings.TrimPrefix(ref, "oci://")
	if byDigest && !strings.Contains(ref, "@sha256:") {
		return "", usageError{fmt.Errorf("%s: name the artifact by digest, REGISTRY/REPOSITORY@sha256:<hex> (aiod plugin push prints it)", ref)}
	}
	keys := map[string]*ecdsa.PublicKey{}
	for _, f := range keyFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		k, err := caps.ParsePublicKey(string(b))
		if err != nil {
			return "", fmt.Errorf("--key %s: %w", f, err)
		}
		keys[f] = k
	}
	p, err := client.Pull(ctx, ref)
	if err != nil {
		return "", err
	}
	signer := ""
	if len(keys) > 0 {
		if signer, err = oci.Verify(p.Signatures, p.Artifact.Digest, keys); err != nil {
			return "", fmt.Errorf("%s: %w", p.Ref, err)
		}
	}
	dir := filepath.Join(into, p.Manifest.Name)
	if err := ocireg.WritePackage(dir, p, force); err != nil {
		return "", err
	}
	sum := sha256.Sum256(p.Module)
	fmt.Fprintf(stdout, "pulled %s %s from %s into %s (%d signatures", p.Manifest.Name, p.Manifest.Version, p.Ref, dir, len(p.Signatures))
	if signer != "" {
		fmt.Fprintf(stdout, ", signed by %s", signer)
	}
	fmt.Fprintf(stdout, ")\npolicy: %q: {\"sha256\": %q}\n", p.Manifest.Name, hex.EncodeToString(sum[:]))
	return dir, nil
}

// pluginAddOCI is `aiod plugin add oci://REF@sha256:... --into PLUGINS_DIR`.
func pluginAddOCI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("add", stderr)
	client := registryFlag(fs)
	into := fs.String("into", "", "plugins directory to install the package into (aiod start --plugins-dir)")
	force := fs.Bool("force", false, "replace a package of that name already in the directory")
	var keys listFlag
	fs.Var(&keys, "key", "public key file (PEM); the package must be signed by one of them; repeatable")
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *into == "" {
		return usageError{errors.New("--into PLUGINS_DIR is required")}
	}
	_, err = pullInto(ctx, client, pos[0], *into, *force, keys, true, stdout)
	return err
}

// pluginSign is `aiod plugin sign REF --key KEY`.
func pluginSign(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("sign", stderr)
	client := registryFlag(fs)
	keyFile := fs.String("key", "", "private key file (PEM, aiod plugin keygen)")
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *keyFile == "" {
		return usageError{errors.New("--key KEY is required")}
	}
	b, err := os.ReadFile(*keyFile)
	if err != nil {
		return err
	}
	key, err := oci.ParsePrivateKey(b)
	if err != nil {
		return fmt.Errorf("--key %s: %w", *keyFile, err)
	}
	ref, sig, err := client.Sign(ctx, pos[0], key)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "signed %s (sigstore bundle %s, a referrer of the artifact)\n", ref, sig)
	return nil
}

// pluginKeygen is `aiod plugin keygen --out PREFIX`: PREFIX.key (private,
// mode 0600) and PREFIX.pub.
func pluginKeygen(args []string, stdout, stderr io.Writer) error {
	fs := flagSet("keygen", stderr)
	out := fs.String("out", "", "write PREFIX.key and PREFIX.pub")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	if *out == "" {
		return usageError{errors.New("--out PREFIX is required")}
	}
	priv, pub, err := oci.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(*out+".key", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(priv); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(*out+".pub", pub, 0o644); err != nil {
		return err
	}
	blk, _ := pem.Decode(pub)
	name := filepath.Base(*out)
	fmt.Fprintf(stdout, "wrote %s.key (keep it secret) and %s.pub\npolicy: \"trusted_keys\": {%q: %q}\n", *out, *out, name, base64.StdEncoding.EncodeToString(blk.Bytes))
	return nil
}

// registryFlag is --registry-auth, the Docker config file of the
// registry's credentials (env AIO_REGISTRY_AUTH).
func registryFlag(fs *flag.FlagSet) *ocireg.Client {
	c := &ocireg.Client{}
	fs.StringVar(&c.AuthFile, "registry-auth", os.Getenv("AIO_REGISTRY_AUTH"), "Docker config file with the registry's credentials (env AIO_REGISTRY_AUTH; default: Docker's own; none: anonymous)")
	return c
}
