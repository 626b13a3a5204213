# aiod: `make run` starts the server, `make test` runs every test.
GO      ?= go
WASM    := GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags=-s
# The semantic version is host.Version (one place); the build stamps the commit.
COMMIT  ?= $(shell c=$$(git rev-parse --short=7 HEAD 2>/dev/null) && { git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; echo $$c; })
LDFLAGS := -X github.com/aiodhq/aiod/host.Commit=$(COMMIT)
HOST    ?= 127.0.0.1
PORT    ?= 18091
# The engine `make conformance` and `make run` use: wazero or wasmtime.
ENGINE  ?= wazero

# Built-in plugins, in tools/list order (plugins/builtin/dist/order), the
# shipped guard plugins (spec/hooks.md), which have no tools: an operator
# switches one on by name in the policy, and the Machine Mode adapter
# (plugins/machine: loaded only with machine tools registered,
# spec/machine-mode.md).
BUILTINS := $(sort $(dir $(wildcard plugins/sandbox/*/main.go))) $(sort $(dir $(wildcard plugins/guards/*/main.go))) plugins/machine/
# The page tools (spec/page-tools.md): embedded apart from the built-ins
# (plugins/browser/dist), served after them with --browser launch or --page-tools.
PAGETOOLS := plugins/browser/page
# Other plugins built into build/plugins/ (not embedded). plugins/examples/relay
# is not among them: it needs an upstream grant, so it is built by its tests.
EXTRA    := plugins/examples/echo/ plugins/examples/hash/ $(dir $(wildcard plugins/conformance/main.go))

# The tally example in every plugin language (plugins/examples/tally-*),
# built by `aiod plugin build` into build/examples/ (not build/plugins/:
# their echo tool would clash with the echo example's). Each needs its
# toolchain (README, "Write a plugin"); a missing one fails the build,
# naming the Debian or npm package. asc comes from the pinned Node tools.
TALLIES  := $(wildcard plugins/examples/tally-*/)
NODE_TOOLS ?= $(or $(AIOD_NODE_TOOLS),$(CURDIR)/.tools/node)

GOFILES  := $(shell find . -name '*.go' -not -path './.tools/*' -not -path './build/*')

.PHONY: all build builtins plugins examples run test test-go test-race test-norace test-norace-run test-short test-cache conformance conformance-run conformance-engines conformance-engines-run bench check check-host check-wasip1 check-host-build staticcheck-tool staticcheck-host staticcheck-wasip1 fmt vet vet-host vet-wasip1 clean

all: build plugins

bin/aiodpack: $(GOFILES) go.mod
	$(GO) build -o $@ ./cmd/aiodpack

# Compile each built-in to wasm and pack it into plugins/builtin/dist/<name>/.
# The page tools first, alone (their build compiles the standard library
# for wasip1 once), then the built-ins two at a time: a module's link and
# its precompile (aiodpack) each keep one core busy, and the cache and
# the package directories are written atomically, one per module. Each
# module is compiled into both engines' caches (build/cache/wazero, which
# make run and the tests' aiod processes use): cold, every bin/aiod started
# on wasmtime compiled every module itself (about 15 s of processor a
# module), and the tests start several at once.
PACK = set -e; n=$$(basename $$1); $(WASM) -o build/wasm/$$0$$n.wasm ./$$1; bin/aiodpack -cache-dir build/cache/wazero -into $$2 build/wasm/$$0$$n.wasm; \
	bin/aiodpack -warm -engine wasmtime -cache-dir build/cache/wazero build/wasm/$$0$$n.wasm
builtins: bin/aiodpack
	@mkdir -p build/wasm
	$(WASM) -o build/wasm/page-tools.wasm ./$(PAGETOOLS)
	bin/aiodpack -cache-dir build/cache/wazero -into plugins/browser/dist build/wasm/page-tools.wasm
	@printf '%s\n' $(BUILTINS) | xargs -P 2 -I{} sh -c '$(PACK)' builtin- {} plugins/builtin/dist

# bin/aiod has both engines (wasmtime needs cgo; CGO_ENABLED=0 builds a
# wazero-only binary). It is built as `make check` (vet, staticcheck) and
# the tests without -race compile the host's packages, so each package is
# compiled once for all of them; with -trimpath it compiled every one of
# them again. A release build adds it: make build BUILDFLAGS=-trimpath.
BUILDFLAGS ?=
build: builtins
	CGO_ENABLED=1 $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' -o bin/aiod ./cmd/aiod

plugins: bin/aiodpack
	@mkdir -p build/wasm build/plugins
	@printf '%s\n' $(EXTRA) | xargs -P 2 -I{} sh -c '$(PACK)' '' {} build/plugins

examples: build
	@host/e2e/testdata/install.sh >/dev/null
	@mkdir -p build/examples
	@printf '%s\n' $(TALLIES) | PATH="$(NODE_TOOLS)/node_modules/.bin:$$PATH" xargs -P 2 -I{} sh -c \
		'bin/aiod plugin build $$0 --into build/examples --work build/work/$$(basename $$0) --cache-dir build/cache/wazero' {}

run: build plugins
	bin/aiod start --host $(HOST) --port $(PORT) --plugins-dir build/plugins --cache-dir build/cache/wazero --engine $(ENGINE)

# The race run, and beside it the conformance suites and the tests without
# -race (host/e2e among them). The whole run is bound by the processor
# (BENCHMARKS.md, "Where CI's time goes"). Their output follows the race
# run's.
# Nothing is built twice: the sub-makes run only tests.
test: build plugins examples
	@mkdir -p build; \
	$(MAKE) --no-print-directory test-norace-run >build/test-norace.log 2>&1 & n=$$!; \
	$(MAKE) --no-print-directory conformance-engines-run >build/conformance.log 2>&1 & c=$$!; \
	r=0; $(MAKE) --no-print-directory test-race || r=$$?; \
	s=0; wait $$c || s=$$?; m=0; wait $$n || m=$$?; \
	echo "==> the conformance suites (run beside the race run)"; cat build/conformance.log; \
	echo "==> the tests without -race (run beside the race run)"; cat build/test-norace.log; \
	test $$r -eq 0 && test $$s -eq 0 && test $$m -eq 0

# The conformance suites on both engines at once (each waits mostly on its
# Node clients): wasmtime's output follows wazero's.
conformance-engines: build plugins
	$(MAKE) --no-print-directory conformance-engines-run

conformance-engines-run:
	@mkdir -p build; \
	$(MAKE) --no-print-directory conformance-run ENGINE=wasmtime >build/conformance-wasmtime.log 2>&1 & p=$$!; \
	s=0; $(MAKE) --no-print-directory conformance-run ENGINE=wazero || s=$$?; \
	w=0; wait $$p || w=$$?; \
	echo "==> conformance on wasmtime (run beside wazero's)"; cat build/conformance-wasmtime.log; \
	test $$s -eq 0 && test $$w -eq 0

# The official MCP conformance suites (0.1.16; 0.2.0-alpha.12 with
# --requirements 2025-11-25 and 2026-07-28) against one bin/aiod with
# build/plugins, Node 22 and the suites installed from host/e2e/testdata/node.
conformance: build plugins
	$(MAKE) --no-print-directory conformance-run

# The suites against what is built (conformance and conformance-engines
# build first, once).
conformance-run:
	AIO_ENGINE=$(ENGINE) AIOD_E2E_CONFORMANCE=1 $(GO) test $(TESTFLAGS) -count=1 -timeout 15m -run '^TestConformance$$' -v ./host/e2e

# How make links test binaries: without DWARF (-w: a race test binary's
# link takes a third less processor time, and nothing reads it: stack traces
# and race reports come from the binary's own tables), and with wazero's
# release stamped in, so that they key wazero's compile cache as bin/aiod and
# bin/aiodpack do and find every module `make build plugins examples`
# compiled (a test binary has no module versions in its build info: unstamped
# it keys the cache "dev", see cmd/aiodtestcache).
WAZERO_VERSION := $(shell $(GO) list -m -f '{{.Version}}' github.com/tetratelabs/wazero)
#
# And without go test's own vet pass (-vet=off): make check vets every
# package, test files included, with all of vet's analyzers (go test runs a
# subset of them, for each package again in each pass: about 45 s of
# processor in the race build alone). The OTLP receiver's module keeps it:
# make check does not vet that module.
TESTFLAGS ?= -vet=off -ldflags='-w -X github.com/tetratelabs/wazero/internal/version.version=$(WAZERO_VERSION)'

# The compile cache for a plain `go test` (unstamped test binaries key it
# "dev"): compiles the built modules into it as such a binary would, without
# the race detector. make's own test targets do not need it (TESTFLAGS).
test-cache:
	$(GO) run ./cmd/aiodtestcache -cache-dir build/cache/wazero $(TESTMODS)

# Packages whose code under test has no concurrency of its own run without
# -race: the race detector has nothing to find there and slows them several
# times. host/internal/interrupt, host/internal/wasmbin, wasmsnap and
# lazytable are pure byte readers and rewriters; host/caps (and its generators),
# cmd/aiod/internal/author, host/deploy, host/internal/pathx, netx, layers,
# host/aoi, host/internal/footprint, unionfs, codetools, host/internal/tracing/otlp
# and host/oci/... parse, check and convert; cmd/aiod is the command line
# (flags and output over the packages below it); sdk/ and plugins/ are
# guest code (wasip1 runs one thread), tested here on the host.
# host/sandboxtest and host/machinetest hold tests and nothing else: they
# drive the built-ins and the Machine Mode adapter through an in-process
# host, whose concurrency is raced by the packages that own it (host,
# host/plugin, host/mcp, host/proc, host/hostfn/..., host/runtime/...);
# under -race they took 2-3 times the processor (sandboxtest 169 s against
# 81 s). NORACE_RUN names the tests of race packages that are built only
# without -race (each one's norace_test.go says why). host/e2e runs
# without -race too, in the same pass and with its tests E2EPARALLEL at a
# time: it drives bin/aiod, built without the race detector as it ships,
# from outside, so -race would instrument only the tests' own clients,
# and its binary would wait behind the race build of every package before
# its first test. Everything else runs with -race.
NORACE := ./host/internal/interrupt ./host/internal/wasmbin ./host/internal/wasmsnap ./host/internal/lazytable ./host/caps/... ./cmd/aiod/internal/author ./host/deploy ./host/internal/pathx ./host/internal/netx ./host/internal/layers ./host/aoi ./host/internal/footprint ./host/internal/unionfs ./host/internal/codetools ./host/internal/tracing/otlp ./host/oci/... ./cmd/aiod ./host/sandboxtest ./host/machinetest ./sdk/... ./plugins/...
NORACE_RUN := -run '^(TestInterpreter|TestMergeDataSameMemory|TestPreparedCache|TestSnapshotCycles|TestSearchLatency)$$' ./host/runtime/wazero ./host/internal/toolsearch
# The longest packages first, longest first, so that none of them starts
# last (go test starts them in this order).
FIRST  := ./host ./host/plugin ./host/runtime/wazero ./host/mcp
E2E    := ./host/e2e
E2EPARALLEL ?= 4
RACEPKGS = $(FIRST) $(filter-out $(shell $(GO) list $(FIRST) $(NORACE) $(E2E)),$(shell $(GO) list ./...))

# Every engine-sensitive test iterates the engine table
# (host/runtime/runtimetest: wazero, and wasmtime in cgo builds) itself;
# the others say why they run on the default engine only.
test-go: test-race test-norace

# Four packages at a time on two cores: the long ones wait on processes,
# browsers and deadlines much of the time (host/sandboxtest alone keeps
# 1.02 cores busy; the whole race run at three at a time, 1.08).
RACEP ?= 4
# wazero's module decoder and compiler (its binary reader, LEB128, and
# wazevo's front end, SSA and back ends) are compiled without the race
# instrumentation (-race=false for those packages): they transform bytes
# they own, with no atomics. Most of the race run's processor went there
# (every host a test starts compiles the built-ins). The rest of wazero
# stays instrumented: an uninstrumented atomic is invisible to the
# detector, so the ordering it gives aiod's code is lost and races are
# reported that are not (all of wazero uninstrumented did that, through
# internal/wasm's close flag). RATIONALE.md, "CI's test run".
WZ := github.com/tetratelabs/wazero/internal
UNINSTRUMENTED := $(WZ)/wasm/binary $(WZ)/leb128 $(WZ)/engine/wazevo/ssa $(WZ)/engine/wazevo/backend/... $(WZ)/engine/wazevo/frontend
RACEGCFLAGS := $(foreach p,$(UNINSTRUMENTED),-gcflags=$(p)=-race=false)
test-race:
	$(GO) test $(TESTFLAGS) -race $(RACEGCFLAGS) -p $(RACEP) -timeout 15m $(RACEPKGS)

# The non-race passes at once: host/e2e (the longest), NORACE_RUN (a few
# tests of three packages), the OTLP receiver's module and the NORACE
# packages. host/e2e's output comes last. TestTenMinutes (the plugin
# tutorial in four languages, timed against its 2-minute target) runs
# after the rest of host/e2e, alone in it: beside the other e2e tests and
# the race build its Go tutorial took 2m55 of waiting on commands.
test-norace:
	$(MAKE) --no-print-directory test-norace-run

test-norace-run:
	@mkdir -p build; \
	{ a=0; $(GO) test $(TESTFLAGS) -timeout 15m -parallel $(E2EPARALLEL) -skip '^TestTenMinutes$$' $(E2E) || a=1; \
		$(GO) test $(TESTFLAGS) -timeout 15m -run '^TestTenMinutes$$' $(E2E) || a=1; exit $$a; } >build/test-e2e.log 2>&1 & e=$$!; \
	$(GO) test $(TESTFLAGS) -timeout 15m $(NORACE_RUN) >build/test-norace-run.log 2>&1 & p=$$!; \
	$(GO) -C $(OTELCOL) test $(filter-out -vet=off,$(TESTFLAGS)) -timeout 10m ./... >build/test-otelcol.log 2>&1 & c=$$!; \
	s=0; $(GO) test $(TESTFLAGS) -timeout 15m $(NORACE) || s=$$?; \
	r=0; wait $$p || r=$$?; cat build/test-norace-run.log; \
	o=0; wait $$c || o=$$?; echo "==> $(OTELCOL) (a module of its own)"; cat build/test-otelcol.log; \
	x=0; wait $$e || x=$$?; echo "==> host/e2e (without -race, $(E2EPARALLEL) tests at a time)"; cat build/test-e2e.log; \
	test $$s -eq 0 && test $$r -eq 0 && test $$o -eq 0 && test $$x -eq 0

# A module of its own (the OpenTelemetry Collector's receiver and its many
# modules stay out of go.mod): traces exported to a real OTLP receiver. It
# holds one test file: `go test` vets it (staticcheck of the collector's
# packages would double make check's time).
OTELCOL := host/e2e/otelcol

# The edit-compile loop: every package's unit tests, no race detector, no
# bin/aiod, Chromium, nginx, Node or bubblewrap (the tests that need them,
# or take long, skip in -short and say why). Not a substitute for make test.
# Four packages at a time: most of them wait (on processes, deadlines,
# clients), and at two the cores sat half idle.
# The longest packages start first (go test starts them in the order
# given; under -short, four at a time, each beside the others: host/plugin
# ~85 s, host ~77, host/runtime/wasmtime ~76, host/sandboxtest ~75,
# host/runtime/wazero ~61), so that none of them starts last.
SHORTP ?= 4
SHORTFIRST := ./host/plugin ./host ./host/runtime/wasmtime ./host/sandboxtest ./host/runtime/wazero
test-short:
	$(GO) test $(TESTFLAGS) -short -count=1 -p $(SHORTP) $(SHORTFIRST) $(filter-out $(shell $(GO) list $(SHORTFIRST)),$(shell $(GO) list ./...))

bench: build plugins
	.ci/bench.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

vet: vet-host vet-wasip1

vet-host:
	$(GO) vet ./...

# With -trimpath, as the modules are built ($(WASM)): vet compiles every
# dependency for its export data, and so the built-ins' build reuses those
# compiles instead of making its own (26 s of processor for both cold, 7 s
# for vet after the build).
vet-wasip1:
	GOOS=wasip1 GOARCH=wasm GOFLAGS=-trimpath $(GO) vet ./sdk/... ./plugins/...

# Reproduces CI's static checks: gofmt, go mod tidy drift, generated-file
# drift (manifest schema), then two lines at once (each leaves much of the
# second core idle: long chains of packages, cgo): the host's (vet, the
# CGO_ENABLED=0 build, the layering rules of host/internal/layers, which
# packages may depend on which, staticcheck) and the wasip1 build's of sdk/
# and plugins/ (vet, staticcheck). staticcheck is pinned here, not in
# go.mod, and installed once into build/tools for both.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt: files above need formatting'; exit 1; }
	$(GO) mod tidy
	$(GO) -C $(OTELCOL) mod tidy
	$(GO) generate ./...
	@git diff --exit-code -- go.mod go.sum $(OTELCOL)/go.mod $(OTELCOL)/go.sum spec/ || { echo 'drift: run go mod tidy / go generate and commit'; exit 1; }
	@$(MAKE) --no-print-directory -j2 --output-sync=target check-host check-wasip1

check-host: staticcheck-host
check-wasip1: staticcheck-wasip1

staticcheck-tool:
	GOBIN=$(CURDIR)/build/tools $(GO) install $(STATICCHECK)

check-host-build: vet-host
	CGO_ENABLED=0 $(GO) build ./cmd/...
	$(GO) test -count=1 ./host/internal/layers

staticcheck-host: staticcheck-tool check-host-build
	build/tools/staticcheck ./...

staticcheck-wasip1: staticcheck-tool vet-wasip1
	GOOS=wasip1 GOARCH=wasm GOFLAGS=-trimpath build/tools/staticcheck ./sdk/... ./plugins/...

clean:
	rm -rf bin build
	find plugins/builtin/dist plugins/browser/dist -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
