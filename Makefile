# Two commands on a fresh machine: `make run` and `make test` (see README.md).

GO        ?= go
TEMPORAL_VERSION := v1.5.1
# protocol/pb's generators. protoc is Debian bookworm's protobuf-compiler; protoc-gen-go must
# match go.mod's google.golang.org/protobuf (protocol/pb/gen.sh checks both).
PROTOC_VERSION        := 3.21.12
PROTOC_GEN_GO_VERSION := v1.36.12
# The temporal CLI on PATH if there is one, else the pinned build in bin/.
TEMPORAL  ?= $(or $(shell command -v temporal 2>/dev/null),$(CURDIR)/bin/temporal)

.PHONY: run cluster demo test test-short compat fuzz bench bench-cluster bench-fleet bench-scale bench-ab chaos soak build vet fmt clean doctor proto proto-check upgrade-test

# The revision `make upgrade-test` (and its short form in `make test`) upgrades from, moved
# forward deliberately: main a few commits before the traffic work landed (c247cd4, the review
# fixes of the one walk engine; ea814f6 brought the traffic), whose schema stops at 0019, so
# that the new build applies 0020 onward (the routers' reports and traffic splits, analysis,
# the task callbacks' pool, rollout groups, ...) while BASE's API replica and workers still
# serve — BASE's routers that do not report, BASE's callbacks (a workflow per task) meeting
# the new workers' pool. Keep it a commit of main's history (CI runs it from a clean clone);
# move it to the last release once there are releases. BBS_UPGRADE_DATA_DIR=<dir> keeps the
# test's cluster data and logs.
UPGRADE_BASE ?= c247cd48d59f8e96fc672116d77e657e160768ee

build: bin/bbs

bin/bbs: FORCE
	$(GO) build -o bin/bbs ./cmd/bbs

# Newer tags of the CLI carry replace directives and cannot be `go install`ed.
$(CURDIR)/bin/temporal:
	@echo "building the Temporal CLI $(TEMPORAL_VERSION) into bin/ (first time only, ~5 minutes)"
	GOBIN=$(CURDIR)/bin $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_VERSION)

# The real Temporal server (go.temporal.io/server, pinned in tools/temporal-server/go.mod, a
# module of its own so that the product's go.mod does not take on its dependencies): the
# server, its SQL tool and the Web UI in one binary. Built once (about 5 minutes).
bin/temporal-server: $(CURDIR)/bin/temporal-server

$(CURDIR)/bin/temporal-server:
	@echo "building the Temporal server (go.temporal.io/server, tools/temporal-server) into bin/ (first time only, ~5 minutes)"
	cd tools/temporal-server && $(GO) build -o $(CURDIR)/bin/temporal-server .

## cluster: the production topology on one machine: PostgreSQL, the real Temporal server (and UI), 2 API replicas behind a front, 2 workers, 3 cells, the router (state in .cluster/).
cluster: bin/bbs $(CURDIR)/bin/temporal-server
	bin/bbs cluster --temporal-server-bin $(CURDIR)/bin/temporal-server

## run: the whole system on embedded defaults (PostgreSQL under .data/ unless DATABASE_URL is set).
run: bin/bbs $(TEMPORAL)
	bin/bbs dev --temporal-bin $(TEMPORAL)

## demo: roll cmd/demoapp under load through the router, vs delete + desire (uses `make run`'s system if up, else starts one with its state in .data/demo/).
demo: bin/bbs $(TEMPORAL)
	$(GO) build -o bin/demoapp ./cmd/demoapp
	$(GO) build -o bin/bbs-demo ./cmd/demo
	bin/bbs-demo --temporal-bin $(TEMPORAL)

## test: every test, against a throwaway PostgreSQL unless DATABASE_URL is set. Tests that need
## a Temporal server fail (they never skip) when the CLI is missing.
## The cluster test (e2e) runs the real Temporal server: bin/temporal-server is built first (~5 minutes, once).
test: $(TEMPORAL) $(CURDIR)/bin/temporal-server
	@test -x "$(TEMPORAL)" || { echo "make test: no Temporal CLI at $(TEMPORAL): unset TEMPORAL to build the pinned one into bin/" >&2; exit 1; }
	BBS_UPGRADE_BASE=$(UPGRADE_BASE) TEMPORAL_BIN=$(TEMPORAL) TEMPORAL_SERVER_BIN=$(CURDIR)/bin/temporal-server $(GO) test -count=1 -timeout 20m ./...
	cd compat && TEMPORAL_BIN=$(TEMPORAL) $(GO) test -count=1 ./...

## compat: only the compatibility tests (compat/, a module of its own): our BBS-protocol listener
## driven by the real Diego BBS Go client, over plain HTTP and mutual TLS.
compat: $(TEMPORAL)
	@test -x "$(TEMPORAL)" || { echo "make compat: no Temporal CLI at $(TEMPORAL): unset TEMPORAL to build the pinned one into bin/" >&2; exit 1; }
	cd compat && TEMPORAL_BIN=$(TEMPORAL) $(GO) test -count=1 ./...

## upgrade-test: Diego's upgrade-stability test: make cluster's shape on BASE's binaries (built from this
## repository's history into bin/upgrade/<commit>/, once), apps under traffic, rollouts, a cancel, a
## rollback and task callbacks under way, each process replaced by the working tree's build one at a
## time; then BASE against the new schema (docs/OPERATING.md, "Upgrades"). BASE defaults to UPGRADE_BASE.
## `make test` runs its short form (two apps) from UPGRADE_BASE.
upgrade-test: $(CURDIR)/bin/temporal-server
	BBS_UPGRADE_BASE=$(if $(filter file,$(origin BASE)),$(UPGRADE_BASE),$(BASE)) BBS_UPGRADE_FULL=1 \
		TEMPORAL_SERVER_BIN=$(CURDIR)/bin/temporal-server $(GO) test ./e2e -run '^TestUpgradeFromBase$$' -count=1 -timeout 30m -v

## test-short: the quick tests only: those that need a Temporal server or run long skip, saying so.
test-short:
	$(GO) test -count=1 -short ./...

## bench: the rollout (fleet included), task and router benchmarks (figures recorded in docs/BENCHMARKS.md).
bench: $(TEMPORAL)
	TEMPORAL_BIN=$(TEMPORAL) $(GO) test ./bench -run '^$$' -bench 'Rollout|Revert|CrashLoop|Tasks|Router|AbortWeight' -benchtime 1x -timeout 90m -v
	TEMPORAL_BIN=$(TEMPORAL) $(GO) test ./auction -run '^$$' -bench . -benchtime 3x

## bench-cluster: the rollout and task benchmarks of bench on make cluster's shape (bbs cluster with sim cells: the real
## Temporal server, history on PostgreSQL, 2 API replicas behind the front, 2 workers), one fresh cluster each; figures
## beside bench's in docs/BENCHMARKS.md. BENCH_CLUSTER_LRPS and BENCH_CLUSTER_TASKS shrink it; BENCH_CLUSTER_DIR keeps the clusters' logs.
bench-cluster: bin/bbs $(CURDIR)/bin/temporal-server
	BBS_BIN=$(CURDIR)/bin/bbs TEMPORAL_SERVER_BIN=$(CURDIR)/bin/temporal-server $(GO) test ./bench -run '^$$' -bench '^BenchmarkCluster$$' -benchtime 1x -timeout 90m -v

## bench-fleet: one change rolled across 2,000 LRPs as a rollout group (three waves, budgets of 100 LRPs
## and 4 new instances a cell) beside the same run's 1,000 independent rollouts; part of bench too.
## BENCH_FLEET_LRPS shrinks it; BENCH_FLEET_FAULT=leader replaces the worker process halfway.
bench-fleet: $(TEMPORAL)
	TEMPORAL_BIN=$(TEMPORAL) $(GO) test ./bench -run '^$$' -bench 'RolloutGroupFleet' -benchtime 1x -timeout 60m -v

## bench-scale: Diego's scale on this machine: 1,000 sim cells, 250,000 instances in 25,000 LRPs
## (place all from empty, list them, convergence, API memory; figures in docs/BENCHMARKS.md).
## BENCH_SCALE_LRPS and BENCH_SCALE_CELLS shrink it.
bench-scale:
	$(GO) test ./bench -run '^$$' -bench 'Scale' -benchtime 1x -timeout 90m -v

## bench-ab: BENCH of revision BASE against the working tree, run alternately PAIRS times (the
## machine's speed drifts; a one-run comparison says little): make bench-ab BASE=HEAD~1 BENCH=ThousandRollouts
BASE ?= HEAD
BENCH ?= Rollout
PAIRS ?= 2
bench-ab: $(TEMPORAL)
	TEMPORAL_BIN=$(TEMPORAL) tools/bench-ab $(BASE) '$(BENCH)' $(PAIRS)

## chaos: kill make cluster's processes (an API replica, the placement leader, a cell, the Temporal
## server, PostgreSQL), each alone then every pair, during rollouts, cancels and rollbacks under
## traffic; prints the table of faults × outcomes (docs/RELIABILITY.md). CHAOS_TRIALS="cell api+leader" picks trials.
chaos: bin/bbs $(CURDIR)/bin/temporal-server
	$(GO) build -o bin/demoapp ./cmd/demoapp
	$(GO) build -o bin/chaos ./cmd/chaos
	bin/chaos matrix --bbs bin/bbs --demoapp bin/demoapp --temporal-server-bin $(CURDIR)/bin/temporal-server --trials "$(CHAOS_TRIALS)"

SOAK_DURATION ?= 10m
## soak: a mixed workload (desires, scale changes, rollouts, cancels, rollbacks, removes) over 200 LRPs
## on sim cells for SOAK_DURATION (default 10m), with faults at random; prints requests, rollouts, faults, violations.
soak: bin/bbs $(CURDIR)/bin/temporal-server
	$(GO) build -o bin/chaos ./cmd/chaos
	bin/chaos soak --bbs bin/bbs --temporal-server-bin $(CURDIR)/bin/temporal-server --duration $(SOAK_DURATION)

## fuzz: run the request-decoding fuzzers (JSON API, BBS protocol) for a while (their corpora are replayed by `make test`).
fuzz:
	$(GO) test ./api -run '^$$' -fuzz FuzzDecodeRequests -fuzztime 60s
	$(GO) test ./protocol -run '^$$' -fuzz FuzzRequests -fuzztime 60s
	$(GO) test ./analysis -run '^$$' -fuzz FuzzDecodeResult -fuzztime 30s

## proto: regenerate protocol/pb/*.pb.go and the Ruby bindings *_pb.rb from the .proto files (commit the result; builds need no protoc).
proto:
	GO=$(GO) PROTOC_VERSION=$(PROTOC_VERSION) PROTOC_GEN_GO_VERSION=$(PROTOC_GEN_GO_VERSION) protocol/pb/gen.sh write

## proto-check: fail, naming the files, if the committed generated code is not what `make proto` makes
## (installs protoc with apt-get when it is missing and we run as root, as on CI).
proto-check:
	GO=$(GO) PROTOC_VERSION=$(PROTOC_VERSION) PROTOC_GEN_GO_VERSION=$(PROTOC_GEN_GO_VERSION) protocol/pb/gen.sh check

vet:
	$(GO) vet ./...
	cd compat && $(GO) vet ./...
	cd tools/temporal-server && $(GO) vet ./...

fmt:
	gofmt -l -w .

clean:
	rm -rf bin/bbs

FORCE:
