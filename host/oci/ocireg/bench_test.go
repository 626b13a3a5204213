package ocireg_test

import (
	"context"
	"crypto/rand"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/aiodhq/aiod/host/oci/ocireg"
)

// BenchmarkFetch measures what a start or reload pays per plugin named by
// OCI reference: a 5 MB module (a Go plugin's size) fetched from a
// loopback registry into an empty cache ("cold"), and found in the cache
// (checked against its artifact; "cached"), with its signatures read
// again from the registry ("cached+refresh", what trusted keys add).
func BenchmarkFetch(b *testing.B) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://")
	mj, _ := pkg("1.0.0")
	mod := make([]byte, 5<<20)
	rand.Read(mod)
	copy(mod, "\x00asm\x01\x00\x00\x00")
	ctx := context.Background()
	ref, err := ocireg.Push(ctx, reg+"/aiod/echo:1", mj, mod)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := ocireg.Fetch(ctx, ref, b.TempDir(), false); err != nil {
				b.Fatal(err)
			}
		}
	})
	cache := b.TempDir()
	if _, _, err := ocireg.Fetch(ctx, ref, cache, false); err != nil {
		b.Fatal(err)
	}
	for _, refresh := range []bool{false, true} {
		name := "cached"
		if refresh {
			name += "+refresh"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := ocireg.Fetch(ctx, ref, cache, refresh); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
