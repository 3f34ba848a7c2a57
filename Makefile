# oar-operator — see README.md. `make run` and `make test` work on a fresh machine with
# Go and the Go module proxy; nothing else is assumed.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

GO        ?= go
BIN       := $(CURDIR)/bin
OARCTL    := $(BIN)/oarctl
CORPUS    := testdata/conformance
FUZZTIME  ?= 5m
# A count, not a duration: a time-bounded run can fail on Go's fuzz coordinator
# deadline (golang/go#75804) with no failing input, which would make CI flaky.
SMOKETIME ?= 20000x
BENCHTIME ?= 1s

# A real control plane for the envtest suites, built from Go modules (hack/tools),
# controller-gen (hack/controller-gen), staticcheck (hack/staticcheck) and promql-check
# (hack/promql, Prometheus' query parser): see
# hack/README.md. Their versions live in those
# modules' go.mod files; a binary is rebuilt only when its module's go.sum is newer.
CONTROLLER_GEN := $(BIN)/controller-gen
STATICCHECK    := $(BIN)/staticcheck
PROMQL_CHECK   := $(BIN)/promql-check
KUBE_VERSION    = $(shell cd hack/tools && $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)
kube_minor      = $(word 2,$(subst ., ,$(KUBE_VERSION)))
kube_ldflag     = -X k8s.io/component-base/version.$(1)=$(2) -X k8s.io/client-go/pkg/version.$(1)=$(2)
KUBE_LDFLAGS    = -s -w $(call kube_ldflag,gitVersion,$(KUBE_VERSION)) $(call kube_ldflag,gitMajor,1) \
                  $(call kube_ldflag,gitMinor,$(kube_minor)) $(call kube_ldflag,gitTreeState,clean)
# Stops what a killed test binary left running of *this checkout's* control plane
# (anchored on the absolute path, so nothing else on the machine is touched).
STOP_ENVTEST    = pkill -f "^$(BIN)/kube-apiserver( |$$)" || true; pkill -f "^$(BIN)/etcd( |$$)" || true

# Fuzz targets as package:target pairs; `make fuzz` runs each for FUZZTIME and
# `make test` for SMOKETIME.
FUZZ_TARGETS := \
	./internal/engine/expr:FuzzCompile \
	./internal/engine/diag:FuzzDistance \
	./internal/engine/copytext:FuzzCompile \
	./internal/engine/transform:FuzzApply \
	./internal/engine/toolobs:FuzzCanonicalJSON \
	./internal/engine/toolobs:FuzzFingerprintMatchesReference \
	./internal/engine:FuzzLoadRules \
	./internal/engine:FuzzLoadCapability \
	./internal/engine:FuzzDecodeDocuments \
	./internal/engine:FuzzDecodeJSON \
	./internal/engine:FuzzGrammarMatchers \
	./internal/engine:FuzzCopyEncodesAsItsMap \
	./internal/engine:FuzzCountersEncodeAsTheirMap \
	./internal/engine:FuzzConfigChecker \
	./internal/engine/fixture:FuzzRunFixture \
	./internal/occurrence:FuzzDecode \
	./internal/decisionlog:FuzzReadDecisionLog \
	./internal/replay:FuzzReadAndReplay \
	./internal/bundle:FuzzDecode \
	./internal/bundle:FuzzLoad \
	./internal/sidecar:FuzzAppendString \
	./internal/sidecar:FuzzEvaluate \
	./internal/inject:FuzzInject \
	./cmd/oarctl:FuzzValidate

.PHONY: all build test fmt-check vet lint tidy-check unit conformance fuzz fuzz-smoke bench bench-workload run clean help \
	redis-server envtest-binaries stop-envtest manifests generate manifests-check

all: build

help: ## List targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## Build oarctl into bin/.
	$(GO) build -o $(OARCTL) ./cmd/oarctl

test: fmt-check vet lint tidy-check manifests-check envtest-binaries unit conformance fuzz-smoke ## Everything CI runs.

fmt-check: ## Fail when gofmt would change a file.
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet: ## go vet every package.
	$(GO) vet ./...

lint: bin/staticcheck ## staticcheck every package (its default checks).
	$(STATICCHECK) ./...

tidy-check: ## Fail when go.mod or go.sum (the root's or a hack/ tools module's) is not tidy.
	@for d in . hack/tools hack/controller-gen hack/staticcheck hack/promql; do \
		(cd $$d && $(GO) mod tidy -diff) || { echo "go.mod in $$d is not tidy: run go mod tidy there"; exit 1; }; \
	done

unit: envtest-binaries redis-server bin/promql-check ## Unit, integration, envtest and seed-corpus fuzz tests.
	@mkdir -p $(CURDIR)/tmp; run=$$(mktemp -d $(CURDIR)/tmp/test.XXXXXX); \
	trap '$(STOP_ENVTEST); rm -rf "$$run"' EXIT; \
	echo "TMPDIR=$$run KUBEBUILDER_ASSETS=$(BIN) $(GO) test -count=1 ./..."; \
	TMPDIR=$$run KUBEBUILDER_ASSETS=$(BIN) $(GO) test -count=1 ./...

stop-envtest: ## Stop leftover etcd/kube-apiserver processes of this checkout's bin/.
	@$(STOP_ENVTEST)

envtest-binaries: bin/kube-apiserver bin/etcd ## Build the envtest control plane into bin/ (once).

# The shared session store's tests start a real redis-server (internal/sidecar/redistest);
# hack/install-redis.sh installs Debian's package with apt-get when it is missing.
redis-server: ## Install redis-server for the tests when it is missing (needs root and apt).
	@hack/install-redis.sh

# The two big builds never run at the same time (the link of kube-apiserver alone peaks
# near 2.4 GB): kube-apiserver waits for etcd.
bin/etcd: hack/tools/go.sum
	cd hack/tools && CGO_ENABLED=0 nice -n 10 $(GO) build -trimpath -ldflags "-s -w" \
		-o $(BIN)/etcd go.etcd.io/etcd/server/v3
	@touch $@

bin/kube-apiserver: hack/tools/go.sum | bin/etcd
	cd hack/tools && CGO_ENABLED=0 nice -n 10 $(GO) build -trimpath -ldflags "$(KUBE_LDFLAGS)" \
		-o $(BIN)/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
	@touch $@

bin/controller-gen: hack/controller-gen/go.sum
	cd hack/controller-gen && $(GO) build -trimpath -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen
	@touch $@

bin/staticcheck: hack/staticcheck/go.sum
	cd hack/staticcheck && $(GO) build -trimpath -o $(STATICCHECK) honnef.co/go/tools/cmd/staticcheck
	@touch $@

# The chart's tests run it on the PrometheusRule's expressions, and evaluate its alerts over
# time with it (internal/chart).
bin/promql-check: hack/promql/go.sum $(wildcard hack/promql/*.go)
	cd hack/promql && $(GO) build -trimpath -o $(PROMQL_CHECK) .
	@touch $@

# controller-gen invocations: CRDs into config/crd/bases, the manager role into
# config/rbac/role.yaml, the ValidatingWebhookConfiguration into
# config/webhook/manifests.yaml, deepcopy next to each API package. GEN_PATHS are the
# packages carrying markers (the API types; the reconcilers' +kubebuilder:rbac markers;
# the admission webhooks' +kubebuilder:webhook markers and the RBAC their certificate
# rotation needs).
GEN_PATHS    := {./api/...,./controllers/...,./internal/admission/...}
CRD_RBAC_GEN = $(CONTROLLER_GEN) rbac:roleName=manager-role crd:allowDangerousTypes=false webhook paths="$(GEN_PATHS)"
OBJECT_GEN   = $(CONTROLLER_GEN) object

# The sidecar's OpenAPI document is written in the package that embeds and serves it;
# docs/ holds a copy for readers and client generators.
OPENAPI_DOC  := internal/sidecar/openapi/openapi.json
OPENAPI_COPY := docs/sidecar-openapi.json

manifests: bin/controller-gen ## Regenerate CRDs, RBAC and the webhook configuration (config/crd/bases, config/rbac/role.yaml, config/webhook/manifests.yaml), copy the CRDs into the chart and the sidecar's OpenAPI document into docs/.
	$(CRD_RBAC_GEN) output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook
	rm -f charts/oar-operator/crds/*.yaml && cp config/crd/bases/*.yaml charts/oar-operator/crds/
	cp $(OPENAPI_DOC) $(OPENAPI_COPY)

generate: bin/controller-gen ## Regenerate zz_generated.deepcopy.go in api/.
	$(OBJECT_GEN) paths="./api/..."

manifests-check: bin/controller-gen ## Fail when generated CRDs (also the chart's copies), RBAC, webhook configuration, deepcopy or docs/sidecar-openapi.json are stale.
	@out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; \
	$(CRD_RBAC_GEN) output:crd:dir=$$out/crd output:rbac:dir=$$out/rbac output:webhook:dir=$$out/webhook; \
	stale=0; \
	diff -ru config/crd/bases $$out/crd || stale=1; \
	diff -ru charts/oar-operator/crds $$out/crd || stale=1; \
	diff -u config/rbac/role.yaml $$out/rbac/role.yaml || stale=1; \
	diff -u config/webhook/manifests.yaml $$out/webhook/manifests.yaml || stale=1; \
	diff -u $(OPENAPI_COPY) $(OPENAPI_DOC) || stale=1; \
	for d in $$(ls -d api/*/); do \
		$(OBJECT_GEN) paths=./$$d output:object:dir=$$out/$$d; \
		diff -u $${d}zz_generated.deepcopy.go $$out/$${d}zz_generated.deepcopy.go || stale=1; \
	done; \
	if [ $$stale = 1 ]; then echo "generated files are stale: run 'make manifests generate'"; exit 1; fi; \
	echo "generated files are up to date"

conformance: build ## Run the conformance corpus through oarctl.
	$(OARCTL) test --json $(BIN)/conformance.json $(CORPUS)

fuzz-smoke: redis-server ## A short run of every fuzz target (SMOKETIME inputs each).
	@log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(SMOKETIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(SMOKETIME) $$pkg >$$log 2>&1 || \
			{ echo "fuzzing $$pkg $$name failed:"; grep -v '^fuzz: elapsed' $$log; exit 1; }; \
	done

# EQUIVALENCE_VARIANTS is how many generated packs `make fuzz` sends through the API
# server and its webhook (TestEquivalence; `make test` sends 1,200), with a sixth as many
# Capability updates.
EQUIVALENCE_VARIANTS ?= 10000

fuzz: envtest-binaries redis-server ## Every fuzz target for FUZZTIME (default 5m each), then TestEquivalence at scale; fails if any failed (a run Go 1.26 stops with its fuzz-time race, go.dev/issue/75804, and no failing input is reported, not counted).
	@failed=; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		log=$$(mktemp); \
		rc=0; $(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $$pkg >$$log 2>&1 || rc=$$?; \
		grep -v '^fuzz: elapsed' $$log || true; \
		if [ $$rc != 0 ]; then \
			if grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input written' $$log; then \
				echo "  $$pkg:$$name stopped on Go 1.26's fuzz-time race (go.dev/issue/75804) with no failing input: not a failure"; \
			else failed="$$failed $$pkg:$$name"; fi; \
		fi; \
		rm -f $$log; \
	done; \
	mkdir -p $(CURDIR)/tmp; run=$$(mktemp -d $(CURDIR)/tmp/fuzz.XXXXXX); \
	trap '$(STOP_ENVTEST); rm -rf "$$run"' EXIT; \
	echo "TestEquivalence with $(EQUIVALENCE_VARIANTS) variants"; \
	TMPDIR=$$run KUBEBUILDER_ASSETS=$(BIN) OAR_EQUIVALENCE_VARIANTS=$(EQUIVALENCE_VARIANTS) \
		$(GO) test -count=1 -timeout=60m -run='^TestEquivalence$$' -v ./internal/admission | grep -E '^(---|=== RUN|ok|FAIL|PASS)|variants|updates|equivalence_test' \
		|| failed="$$failed ./internal/admission:TestEquivalence"; \
	if [ -n "$$failed" ]; then echo "fuzz targets that failed:$$failed"; exit 1; fi

bench: build redis-server ## Go benchmarks (the session-store ones on a real redis-server), an oarctl bench run, and the generated workloads (bench-workload).
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./internal/...
	$(OARCTL) bench --capability cmd/oarctl/testdata/bench/capability.yaml \
		--rules cmd/oarctl/testdata/bench/rules.yaml \
		--occurrences cmd/oarctl/testdata/bench/occurrences.jsonl -n 200000
	@$(MAKE) --no-print-directory bench-workload

# The realistic workloads of issue #14, generated by hack/benchgen (seed BENCH_SEED) into
# a temporary directory: 100 rules in one pack, and 1,000 rules in ten tenant packs under
# their own namespaces, each with 10,000 occurrences over 100 sessions. Each is measured
# BENCH_RUNS times with BENCH_N evaluations; the first line of each run is the shape of
# the workload (rules reached and fired per occurrence, decisions), the next ones p50 and
# p99 by anchor, the last p50 and p99 of each occurrence's fastest evaluation (--best: the
# engine's latencies with the machine's stalls left out, comparable across machines).
# A second measurement of each run collects garbage between passes only
# (--collect-between-passes): its p50 and p99 leave out the collector's share.
BENCH_SEED ?= 1
BENCH_N    ?= 200000
BENCH_RUNS ?= 1

bench-workload: build ## oarctl bench on the generated 100- and 1,000-rule workloads: evals/s, p50, p99, allocs/eval, p50 and p99 by anchor, at each occurrence's fastest and with the collector between passes.
	@dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	$(GO) build -o $$dir/benchgen ./hack/benchgen; \
	$$dir/benchgen -seed $(BENCH_SEED) -rules 100 -out $$dir/100; \
	$$dir/benchgen -seed $(BENCH_SEED) -rules 100 -tenants 10 -out $$dir/1000; \
	for w in 100 1000; do \
		rules=; for f in $$dir/$$w/pack-*.json; do rules="$$rules --rules $$f"; done; \
		for run in $$(seq $(BENCH_RUNS)); do \
			echo "== $$w-rule workload, run $$run"; \
			$(OARCTL) bench --shape --by-anchor --best --capability $$dir/$$w/capability.json $$rules \
				--occurrences $$dir/$$w/occurrences.jsonl -n $(BENCH_N); \
			$(OARCTL) bench --collect-between-passes --capability $$dir/$$w/capability.json $$rules \
				--occurrences $$dir/$$w/occurrences.jsonl -n $(BENCH_N); \
		done; \
	done

# ARGS are the demo's flags: -v copies the binaries' logs to the terminal, -exit stops
# after the tour.
ARGS ?=
# The demo runs the operator's own binaries (bin/manager, bin/oar-engine). Built, then run
# (not `go run`, which turns the demo's clean exit on Ctrl-C into a failure).
run: envtest-binaries ## The whole operator on a local control plane: samples, webhook refusal, status, sidecar decisions (ARGS=-exit stops after the tour, ARGS=-v shows the logs).
	$(GO) build -o $(BIN)/ ./hack/demo ./cmd/manager ./cmd/oar-engine
	$(BIN)/demo $(ARGS)

clean: ## Remove bin/: the control plane's etcd and kube-apiserver too, which take minutes to build again.
	rm -rf $(BIN)

IMG ?= oar-operator:latest

.PHONY: docker-build
docker-build: ## Build the image (manager, oar-engine, oarctl) with Docker; needs a Docker engine.
	docker build -t $(IMG) .

# The Helm chart (charts/oar-operator) in the cluster $KUBECONFIG names, through the Helm
# library (hack/deploy): no helm or kubectl binary needed. hack/deploy refuses to run
# without $KUBECONFIG. The CRDs are applied server-side first (Helm never upgrades a
# chart's crds/); DEPLOY_VALUES is an optional values file; DEPLOY_WAIT bounds the wait
# for the rollout (0: do not wait).
DEPLOY_NAMESPACE ?= oar-system
DEPLOY_RELEASE   ?= oar-operator
DEPLOY_VALUES    ?=
DEPLOY_WAIT      ?= 5m

.PHONY: deploy undeploy
deploy: ## Install or upgrade the chart in $KUBECONFIG's cluster (namespace oar-system, image IMG).
	$(GO) run ./hack/deploy --namespace $(DEPLOY_NAMESPACE) --release $(DEPLOY_RELEASE) --image $(IMG) \
		--wait $(DEPLOY_WAIT) $(if $(DEPLOY_VALUES),--values $(DEPLOY_VALUES))

undeploy: ## Uninstall the chart from $KUBECONFIG's cluster (the CRDs and custom resources stay).
	$(GO) run ./hack/deploy --uninstall --namespace $(DEPLOY_NAMESPACE) --release $(DEPLOY_RELEASE) --wait $(DEPLOY_WAIT)

# The engine sidecar's load run (not part of `make test`): hack/loadgen starts
# bin/oar-engine on loopback with the 100-rule bench bundle, sends POST /v1/evaluate
# open loop at each of LOAD_RATES for LOAD_DURATION, LOAD_RUNS times each (a row per
# run, with the CPU the rest of the machine used and the hypervisor stole, which the
# tail follows), then measures the resident memory of a fresh engine holding a
# 1,000-rule bundle and 10,000 sessions. LOAD_ARGS passes more flags: --floor adds a
# GET /healthz row after each run (the latency that is not the evaluation), --pin gives
# the engine and the generator CPUs of their own, and --idle-poll keeps the CPUs out of
# idle halt for the run, as a latency-tuned node does (needs root); `bin/loadgen --help`
# lists the rest.
LOAD_RATES    ?= 1000,10000
LOAD_DURATION ?= 10s
LOAD_RUNS     ?= 1
LOAD_ARGS     ?=

.PHONY: load bench-sidecar
load: ## Load run of oar-engine from a second process: achieved rate, p50/p99, errors, RSS, and the peak memory of a flood of large tool calls.
	$(GO) build -o $(BIN)/oar-engine ./cmd/oar-engine
	$(GO) build -o $(BIN)/loadgen ./hack/loadgen
	$(BIN)/loadgen --engine $(BIN)/oar-engine --bench cmd/oarctl/testdata/bench \
		--rates $(LOAD_RATES) --duration $(LOAD_DURATION) --runs $(LOAD_RUNS) $(LOAD_ARGS)

.PHONY: bench-sessions
bench-sessions: redis-server ## Sessions in memory vs in Redis: p50/p99 of an occurrence that reads and writes state and of one that does not, and two replicas' throughput.
	$(GO) test -run='^$$' -bench='^BenchmarkSession' -benchmem -benchtime=$(BENCHTIME) ./internal/sidecar/

bench-sidecar: redis-server ## The sidecar's handler benchmarks (sessions in memory and in Redis), then the load run.
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./internal/sidecar/...
	@$(MAKE) --no-print-directory load
