# harness-operator — developer entry points. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

export GOTOOLCHAIN := local
# One build configuration for vet, the tests, bin/ and the images (whose
# builds are static and path-free: hack/images): the compiled packages of
# one are the others', instead of each configuration compiling the whole
# dependency graph again. The race detector needs cgo: its targets set
# CGO_ENABLED=1 (RACE_ENV), a configuration of its own anyway.
export GOFLAGS := -buildvcs=false -trimpath
export CGO_ENABLED := 0
RACE_ENV := CGO_ENABLED=1

CONTROLLER_GEN := go tool controller-gen
# STEP runs a command as a named step: with CI_STEPS_FILE set (.ci/run sets
# it) its wall and CPU time go into .ci/run's step table (hack/ci/step).
STEP := hack/ci/step
# KUBEBUILDER_ASSETS is the directory of the real etcd and kube-apiserver,
# built from the Go module proxy on first use and cached outside the repo.
ENVTEST_ASSETS = $(shell $(STEP) setup-envtest hack/setup-envtest.sh)
# CODEX_BIN is the real `codex app-server` (pinned @openai/codex from npm), and
# CODEX_BIN_BELOW_FLOOR a real release below the version floor.
CODEX_BIN_PATH = $(shell $(STEP) setup-codex hack/setup-codex.sh)
CODEX_BELOW_FLOOR_PATH = $(shell $(STEP) setup-codex-below-floor hack/setup-codex.sh 0.148.0)
GO_TEST_FLAGS ?= -count=1 -timeout=20m
# GO_TEST runs test packages as go test does, with the linked test binaries
# kept in the cache (hack/testbin: go test links every binary on every run,
# a quarter of make test's CPU); it takes go test's -p, -tags, -race, -run,
# -v, -count and -timeout, and never vets (fmt-vet does, once).
GO_TEST := go run $(CURDIR)/hack/testbin

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

.PHONY: generate
generate: ## Generate deepcopy code for the API types.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: generate-wire
generate-wire: ## Generate the dispatcher API's JSON Schema (internal/contract/wire/wire.schema.json), the error-code tables of docs/dispatcher-api.md and the OpenClaw plugin's src/wire.ts from internal/contract/wire, and the selection decision table the plugin's tests read (clients/openclaw/test/fixtures/decisions.json).
	go run ./hack/wiregen
	go test -count=1 ./internal/policy/selection -run '^TestDecisionTable$$' -update
	tools="$(OPENCLAW_TOOLS)" && cd clients/openclaw && PATH="$$tools/bin:$$PATH" sh scripts/link-tools.sh && PATH="$$tools/bin:$$PATH" node scripts/wire-ts.mjs

.PHONY: manifests
manifests: ## Generate CRDs (config/crd/bases) and the manager's and the dispatcher's ClusterRoles (config/rbac/role.yaml, config/rbac/dispatcher/role.yaml) from markers.
	$(CONTROLLER_GEN) crd rbac:roleName=harness-operator-manager \
		paths=./api/... paths=./controllers/... paths=./internal/manager/webhook/... \
		output:crd:artifacts:config=config/crd/bases \
		output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=harness-operator-dispatcher paths=./internal/dispatcher/... \
		output:rbac:artifacts:config=config/rbac/dispatcher
	rm -f charts/harness-operator/crds/*.yaml
	cp config/crd/bases/*.yaml charts/harness-operator/crds/

.PHONY: build
build: generate binaries ## Build the binaries into bin/.

# binaries is build without generate: test-e2e's cluster lane builds them
# while other lanes compile the generated code.
.PHONY: binaries
binaries:
	$(STEP) go-build go build -o bin/ ./cmd/...

.PHONY: fmt
fmt: ## gofmt check of every tracked Go file.
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# VET_TAGS are every build tag of the module's own files, so one go vet sees
# them all; the tests (GO_TEST) then run without vetting each package
# again.
VET_TAGS := e2e,postgres,faults,images

.PHONY: fmt-vet
fmt-vet: fmt go-modules ## gofmt and one go vet of every package with every build tag (fast; part of `make test`).
	$(STEP) vet go vet -tags $(VET_TAGS) ./...

# actionlint checks the release workflow (which cannot run here); shellcheck
# and pyflakes are off so every machine checks the same things.
ACTIONLINT_FLAGS := -shellcheck= -pyflakes=

# lint does not run go vet itself: golangci-lint's govet is vet, with the
# same build tags (.golangci.yml).
.PHONY: lint
lint: fmt ## gofmt, golangci-lint (vet among its linters), kube-api-linter on api/ (builds the linter once), actionlint on the workflows.
	gcl="$$($(STEP) setup-lint hack/setup-lint.sh)"; \
	$(STEP) golangci-lint hack/at-fixed-path.sh "$$gcl" run --config .golangci.yml ./...; \
	$(STEP) kube-api-linter hack/at-fixed-path.sh "$$gcl" run --config .golangci-kal.yml ./api/...
	al="$$($(STEP) setup-actionlint hack/setup-lint.sh actionlint)"; \
	$(STEP) actionlint "$$al" $(ACTIONLINT_FLAGS) .github/workflows/*.yaml

# TEST_DEPS sets up (once) and exports what the suites run against: the real
# control plane, Codex, and the Codex release below the floor.
define TEST_DEPS
assets="$(ENVTEST_ASSETS)"; codex="$(CODEX_BIN_PATH)"; below="$(CODEX_BELOW_FLOOR_PATH)"; \
	[[ -n "$$assets" && -n "$$codex" && -n "$$below" ]] || { echo "setting up test dependencies failed (see above)"; exit 1; }; \
	export KUBEBUILDER_ASSETS="$$assets" CODEX_BIN="$$codex" CODEX_BIN_BELOW_FLOOR="$$below"
endef

# RACE_PACKAGES are the packages that run goroutines of their own: the turn
# engine (whose suite also runs the session finalizer against it), the API,
# the journal, the app-server client and adapters, the selection views, the benchmarks'
# app-server double, the model gateway's streams, and the process suite (whose manager and dispatcher are
# then built with -race). They run only under -race (test-race);
# TEST_PACKAGES are the others.
RACE_PACKAGES := ./internal/dispatcher/engine/ ./internal/dispatcher/httpapi/ ./internal/dispatcher/store/journal/ ./internal/harness/appserver/ \
	./internal/dispatcher/adapter/... ./test/dispatcher/ ./internal/testutil/appserverdouble/ ./internal/policy/snapshot/ \
	./internal/dispatcher/modelgateway/
TEST_PACKAGES = $(filter-out $(shell go list $(RACE_PACKAGES)),$(shell go list ./...))

# ISOLATED runs a test command in a network namespace of its own where only
# loopback is up, after a guard proved that nothing can leave; no proxy
# variables, npm offline, GOPROXY off (hack/isolated; needs root).
ISOLATED := go run $(CURDIR)/hack/isolated --
# ISOLATED_HERE runs the guard and cleans the environment where it is (the
# local cluster's namespace, where the cluster's addresses are) instead of
# making a namespace.
ISOLATED_HERE := go run $(CURDIR)/hack/isolated -here --

# deps installs and builds (once) everything the suites run against, with
# the downloads beside the builds instead of after them (-j); each set-up
# script locks its own cache entry, so a suite asking at the same time
# waits for it. .ci/run's first step.
DEPS := deps-go-modules deps-envtest deps-codex deps-codex-below-floor deps-openclaw deps-postgres deps-lint deps-actionlint deps-node
.PHONY: deps $(DEPS)
deps: ## Install and build every test dependency into the cache, in parallel (first use: the downloads run beside the builds).
	@$(MAKE) --no-print-directory -j4 -O $(DEPS)
deps-go-modules: go-modules
# etcd, the Kubernetes binaries and helm, in one go build.
deps-envtest:
	@$(STEP) setup-envtest hack/setup-envtest.sh >/dev/null
deps-codex:
	@$(STEP) setup-codex hack/setup-codex.sh >/dev/null
deps-codex-below-floor:
	@$(STEP) setup-codex-below-floor hack/setup-codex.sh 0.148.0 >/dev/null
deps-openclaw:
	@$(STEP) setup-openclaw hack/setup-openclaw.sh >/dev/null
deps-postgres:
	@$(STEP) setup-postgres hack/setup-postgres.sh >/dev/null
deps-lint:
	@$(STEP) setup-lint hack/setup-lint.sh >/dev/null
deps-actionlint:
	@$(STEP) setup-actionlint hack/setup-lint.sh actionlint >/dev/null
# The local node's Debian packages and KWOK (after the Kubernetes build,
# whose modules it shares).
deps-node:
	@$(STEP) local-cluster-build hack/local-cluster.sh build >/dev/null

# root stops a target that needs root before it builds anything.
.PHONY: root
root:
	@[[ "$$(id -u)" == 0 ]] || { echo "make $(MAKECMDGOALS) needs root: its tests run in network namespaces of their own and mount tmpfs volumes (the end-to-end suite also runs a real node). Run it as root."; exit 1; }

# go-modules downloads every module a build or test of any tag needs, and
# the module's Go tools (controller-gen, which a test runs), before the tests
# run where GOPROXY is off.
.PHONY: go-modules
go-modules:
	@$(STEP) go-modules go list -deps -test -tags $(VET_TAGS) ./... tool >/dev/null

# test runs its two halves one after the other: side by side they took
# longer (400 s against 340 s) and used 40 % more CPU, the envtest API
# servers and Codex processes living longer while they wait for the CPU.
.PHONY: test
test: root fmt-vet ## Unit, envtest (real etcd + kube-apiserver) and real-Codex suites, then the concurrent packages under the race detector (test-race); every test in a network namespace of its own (needs root).
	@$(MAKE) --no-print-directory test-packages
	@$(MAKE) --no-print-directory test-race

# test-packages is make test's half without the race detector: every
# package but RACE_PACKAGES.
.PHONY: test-packages
test-packages: root go-modules
	$(TEST_DEPS); $(STEP) go-test $(ISOLATED) $(GO_TEST) $(GO_TEST_FLAGS) $(TEST_PACKAGES)

# OPENCLAW_TOOLS is the cached Node 24, openclaw and TypeScript
# (hack/setup-openclaw.sh installs them once).
OPENCLAW_TOOLS = $$($(STEP) setup-openclaw hack/setup-openclaw.sh)

.PHONY: test-openclaw
test-openclaw: ## The OpenClaw plugin's tests (clients/openclaw, node's test runner) on the cached Node 24.
	tools="$(OPENCLAW_TOOLS)" && cd clients/openclaw && PATH="$$tools/bin:$$PATH" ../../$(STEP) npm-test $(ISOLATED) npm test

# The PostgreSQL store's suites need a real PostgreSQL: their files carry the
# build tag postgres, so `make test` never starts one. hack/setup-postgres.sh
# installs the server binaries once; internal/testutil/pgtest runs them.
# cmd/dispatcher's test on PostgreSQL also needs envtest and the real Codex.
.PHONY: test-postgres
test-postgres: root go-modules ## The PostgreSQL store's conformance and migration tests, the test server helper's own and the dispatcher with --store=postgres, on a real PostgreSQL, under the race detector.
	$(TEST_DEPS); pg="$$($(STEP) setup-postgres hack/setup-postgres.sh)" && export POSTGRES_DIR="$$pg" && \
		$(STEP) postgres $(ISOLATED) env $(RACE_ENV) $(GO_TEST) -race -tags postgres $(GO_TEST_FLAGS) ./internal/dispatcher/store/pgstore/... ./internal/testutil/pgtest/... && \
		$(STEP) dispatcher-postgres $(ISOLATED) env $(RACE_ENV) $(GO_TEST) -race -tags postgres $(GO_TEST_FLAGS) -run 'OnPostgres$$' ./cmd/dispatcher/

.PHONY: load-replicas
load-replicas: root go-modules ## The replicas' fault campaign on processes (test-e2e runs it on the chart's Deployment): 3 dispatchers on one PostgreSQL under 20 sessions of load, a rolling restart and a SIGKILL (minutes; not part of CI).
	$(TEST_DEPS); pg="$$(hack/setup-postgres.sh)" && POSTGRES_DIR="$$pg" $(ISOLATED) $(GO_TEST) -tags postgres -count=1 -timeout=20m -v -run 'UnderLoad$$' ./test/faults/

.PHONY: test-faults
test-faults: root go-modules ## The fault campaign on processes: 20 sessions with host tools and approvals on the real Codex, each fault injected FAULT_INJECTIONS times (unset: the full campaign, where every phase must be hit too; docs/reliability.md); FAULTS=<regexp> picks faults; prints the table (minutes; make test-e2e runs E2E_FAULT_INJECTIONS of each).
	$(TEST_DEPS); $(STEP) fault-campaign $(ISOLATED) $(GO_TEST) -tags faults -count=1 -timeout=40m -v -run 'FaultCampaign$$' ./test/faults/

# E2E_FAULT_INJECTIONS is how often make test-e2e's fault campaign injects
# each fault: a campaign reduced to what CI's time allows.
E2E_FAULT_INJECTIONS := 1

# test-long holds the scenarios too long for CI, in the same isolation as
# make test; later long scenarios (gateway reloads, elasticity, upgrades)
# join it.
.PHONY: test-long
test-long: test-faults load-replicas ## The long scenarios outside CI, isolated like make test: the whole fault campaign (test-faults) and the replicas' campaign (load-replicas).

.PHONY: bench-admission
bench-admission: ## What the manager's admission webhooks cost a create: 50 creates in flight, AgentSessions and AgentHarnesses, with 0, 100 and 1,000 policies and harnesses already there; p50/p99 end to end, from the API server's webhook metric and spans and from the manager's handler metric (BenchmarkAdmission; about 22 minutes on an idle 2-core machine; not part of CI).
	$(TEST_DEPS); go test -run '^$$' -bench Admission -benchtime 1000x -count=1 -timeout=30m ./test/scale/

.PHONY: bench-scale
bench-scale: ## The operator at 1,000, 5,000 and 10,000 AgentSessions in 50 namespaces (20 harnesses, 10 policies): creation to all Ready, a policy change reaching 10 % and 100 % of the sessions against the API server's floor, writes per session at rest and per change, manager and dispatcher RSS; BENCH_OUT=<dir> also writes operator-scale.json (BenchmarkOperatorScale; estimated ~10 minutes on an idle 2-core machine, much longer under load — docs/benchmarks/operator-scale.md; not part of CI).
	$(TEST_DEPS); go test -run '^$$' -bench OperatorScale -benchtime 1x -count=1 -timeout=60m ./test/scale/

# bench-store runs both on a durable PostgreSQL (pgtest.StartDurable), as the
# journal fsyncs: the store's own operations per turn, then whole turns
# through the dispatcher's API (envtest, the real Codex, the stub model).
.PHONY: bench-store
bench-store: ## The file journal and PostgreSQL side by side: what each adds to a turn (BenchmarkTurnOverhead), then turns through the dispatcher's HTTPS API, 1 and 10 sessions at once, p50/p99 (BenchmarkDispatcherStoreOverhead; minutes; not part of CI).
	$(TEST_DEPS); pg="$$(hack/setup-postgres.sh)" && export POSTGRES_DIR="$$pg" && \
		go test -tags postgres -run '^$$' -bench TurnOverhead -benchtime 3s -count=1 ./internal/dispatcher/store/pgstore/ && \
		go test -tags postgres -run '^$$' -bench DispatcherStoreOverhead -benchtime 1x -count=1 -timeout=30m ./internal/dispatcher/httpapi/

# bench-dispatcher writes its JSON figures, its output and its profiles to
# BENCH_OUT (default bin/bench), and the figures and the profiles' top 10 as
# text to docs/benchmarks/ (docs/benchmarks/dispatcher.md explains them).
BENCH_OUT ?= $(CURDIR)/bin/bench
.PHONY: bench-dispatcher
bench-dispatcher: ## The dispatcher in its own process (BenchmarkDispatcherProcess: CPU per turn at 1-50 sessions, the HTTP layer's share, each turn's added latency in an open loop at a measured 50 % utilisation, CPU per turn with 1,000 harnesses and policies ÷ 64 and 10), then the in-process arms at 1-200 sessions, direct engine vs. HTTPS+SSE+authn/z, on the double and on the real Codex (BenchmarkDispatcherConcurrency), with CPU and allocation profiles (about 12 minutes; not part of CI).
	$(TEST_DEPS); mkdir -p "$(BENCH_OUT)" && \
		BENCH_OUT="$(BENCH_OUT)" go test -v -run '^$$' -bench 'DispatcherProcess$$' -benchtime 1x -count=1 -timeout=30m \
			./internal/dispatcher/httpapi/ | tee "$(BENCH_OUT)/dispatcher-process.txt" && \
		BENCH_OUT="$(BENCH_OUT)" go test -v -run '^$$' -bench 'DispatcherConcurrency$$' -benchtime 1x -count=1 -timeout=30m \
			./internal/dispatcher/httpapi/ | tee "$(BENCH_OUT)/dispatcher-concurrency.txt" && \
		hack/bench-profiles.sh "$(BENCH_OUT)" docs/benchmarks && \
		cp "$(BENCH_OUT)/dispatcher-process.json" "$(BENCH_OUT)/dispatcher-concurrency.json" docs/benchmarks/

.PHONY: bench
bench: ## The benchmarks one after another, then docs/benchmarks.md and its plots (hack/bench.sh; SECTIONS=… picks some; outputs, series and profiles kept in BENCH_OUT (default bin/bench); about 33 min on an idle 2-core machine: admission 22, dispatcher 4, operator scale 7, selection, engine, journal and store under 1 each; not part of CI).
	$(TEST_DEPS); BENCH_OUT="$(BENCH_OUT)" hack/bench.sh $(SECTIONS)

FUZZTIME ?= 10m
.PHONY: fuzz
fuzz: ## Every native Go fuzz target for FUZZTIME each (default 10m), one after another, with the executions per target (hack/fuzz.sh; not part of CI).
	FUZZTIME="$(FUZZTIME)" hack/fuzz.sh

.PHONY: openclaw-plugin
openclaw-plugin: ## The OpenClaw plugin as an npm pack tarball in clients/openclaw.
	tools="$(OPENCLAW_TOOLS)" && cd clients/openclaw && PATH="$$tools/bin:$$PATH" npm run build && PATH="$$tools/bin:$$PATH" npm pack

.PHONY: test-race
test-race: root go-modules ## The concurrent packages under the race detector (their process suites' binaries too), isolated; part of make test.
	$(TEST_DEPS); $(STEP) go-test-race $(ISOLATED) env $(RACE_ENV) $(GO_TEST) -race $(GO_TEST_FLAGS) $(RACE_PACKAGES)

# IMAGES_DIR holds the image archives and images.env (docs/images.md).
IMAGES_DIR ?= .local/images

.PHONY: images
images: ## Container images as OCI archives in $(IMAGES_DIR), with no engine and no registry (docs/images.md).
	$(STEP) images go run ./hack/images -out "$(IMAGES_DIR)"

.PHONY: images-smoke
images-smoke: images ## Run the built Codex image like a restricted Pod (read-only root, nonroot, no network; needs root).
	go test -tags images $(GO_TEST_FLAGS) -run CodexImage ./hack/images/

.PHONY: images-reproducible
images-reproducible: ## Build every image twice from empty build caches and compare the digests (slow: two cold Go builds).
	hack/images/check-reproducible.sh

.PHONY: images-lock
images-lock: ## Re-pin images/debian.lock to the configured Debian sources' current packages.
	go run ./hack/images -update-lock -platforms linux/amd64,linux/arm64

.PHONY: test-e2e
test-e2e: root go-modules generate ## The fault campaign on processes (E2E_FAULT_INJECTIONS of each fault), then side by side: the OpenClaw plugin's tests and the real-OpenClaw test on make run's system; the PostgreSQL store's suites; the binaries, the images, chart tests and the end-to-end suite (the chart's images as Pods on a local cluster with a real node); then proves down restores the machine (needs root; hack/test-e2e.sh).
	@# Everything the lanes use is set up here, before they start side by side;
	@# each lane's target then finds it in the cache.
	helm="$$($(STEP) setup-helm hack/setup-helm.sh)"; codex="$(CODEX_BIN_PATH)"; below="$(CODEX_BELOW_FLOOR_PATH)"; \
	assets="$(ENVTEST_ASSETS)"; tools="$(OPENCLAW_TOOLS)"; pg="$$($(STEP) setup-postgres hack/setup-postgres.sh)"; \
	[[ -n "$$helm" && -n "$$codex" && -n "$$below" && -n "$$assets" && -n "$$tools" && -n "$$pg" ]] || { echo "setting up e2e dependencies failed (see above)"; exit 1; }; \
	IMAGES_DIR="$(abspath $(IMAGES_DIR))" LOCAL_CLUSTER_IMAGES_DIR="$(abspath $(IMAGES_DIR))" E2E_FAULT_INJECTIONS="$(E2E_FAULT_INJECTIONS)" hack/test-e2e.sh

# The suites of make test-e2e's lanes that no other target runs (hack/test-e2e.sh
# runs the lanes side by side; each target also runs alone, as root):
# test-openclaw-system is the published OpenClaw with the plugin against make
# run's system (test/openclaw); test-e2e-system the chart tests and the
# end-to-end suite in the local cluster's network namespace, after the guard
# proved that namespace has no way off the machine (the cluster must be up:
# hack/local-cluster.sh up; the binaries and images built: make binaries images).
.PHONY: test-openclaw-system test-e2e-system
test-openclaw-system: root go-modules
	$(TEST_DEPS); tools="$(OPENCLAW_TOOLS)"; [[ -n "$$tools" ]] || { echo "setting up openclaw failed (see above)"; exit 1; }; \
	OPENCLAW_TOOLS="$$tools" $(STEP) openclaw $(ISOLATED) $(GO_TEST) -tags e2e $(GO_TEST_FLAGS) ./test/openclaw/...
test-e2e-system: root go-modules
	$(TEST_DEPS); helm="$$(hack/setup-helm.sh)" && pg="$$(hack/setup-postgres.sh)" && eval "$$(hack/local-cluster.sh env)" && \
	HELM_BIN="$$helm" POSTGRES_DIR="$$pg" E2E_BIN_DIR="$(CURDIR)/bin" E2E_IMAGES_ENV="$(abspath $(IMAGES_DIR))/images.env" \
		$(STEP) e2e hack/local-cluster.sh exec $(ISOLATED_HERE) $(GO_TEST) -tags e2e $(GO_TEST_FLAGS) ./test/e2e/...

.PHONY: envtest-assets
envtest-assets: ## Build (once) and print the control-plane binaries directory.
	@hack/setup-envtest.sh

.PHONY: run
run: build ## Run the whole system locally: control plane, manager with webhooks, samples, codex app-server, dispatcher.
	assets="$(ENVTEST_ASSETS)"; codex="$(CODEX_BIN_PATH)"; \
	[[ -n "$$assets" && -n "$$codex" ]] || { echo "setting up the control plane or codex failed (see above)"; exit 1; }; \
	KUBEBUILDER_ASSETS="$$assets" CODEX_BIN="$$codex" go run ./hack/devcluster --manager=bin/manager --write-kubeconfig=.local/kubeconfig
