# oar-operator — see README.md. `make run` and `make test` work on a fresh machine with
# Go and the Go module proxy; nothing else is assumed.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

GO        ?= go
BIN       := $(CURDIR)/bin
OARCTL    := $(BIN)/oarctl
CORPUS    := testdata/conformance
FUZZTIME  ?= 5m
SMOKETIME ?= 10s
BENCHTIME ?= 1s

# Fuzz targets as package:target pairs; `make fuzz` runs each for FUZZTIME and
# `make test` for SMOKETIME.
FUZZ_TARGETS := \
	./internal/engine/expr:FuzzCompile \
	./internal/engine/copytext:FuzzCompile \
	./internal/engine/transform:FuzzApply \
	./internal/engine/toolobs:FuzzCanonicalJSON \
	./internal/engine:FuzzLoadRules \
	./internal/engine:FuzzLoadCapability \
	./internal/engine:FuzzDecodeDocuments

.PHONY: all build test fmt-check vet unit conformance fuzz fuzz-smoke bench run clean help

all: build

help: ## List targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## Build oarctl into bin/.
	$(GO) build -o $(OARCTL) ./cmd/oarctl

test: fmt-check vet unit conformance fuzz-smoke ## Everything CI runs.

fmt-check: ## Fail when gofmt would change a file.
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet: ## go vet every package.
	$(GO) vet ./...

unit: ## Unit, integration and seed-corpus fuzz tests.
	$(GO) test -count=1 ./...

conformance: build ## Run the conformance corpus through oarctl.
	$(OARCTL) test --json $(BIN)/conformance.json $(CORPUS)

fuzz-smoke: ## A short run of every fuzz target.
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(SMOKETIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(SMOKETIME) $$pkg >/dev/null || \
			{ echo "fuzzing $$pkg $$name failed"; $(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=1s $$pkg; exit 1; }; \
	done

fuzz: ## Every fuzz target for FUZZTIME (default 5m each).
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

bench: build ## Go benchmarks and an oarctl bench run.
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./internal/...
	$(OARCTL) bench --capability cmd/oarctl/testdata/bench/capability.yaml \
		--rules cmd/oarctl/testdata/bench/rules.yaml \
		--occurrences cmd/oarctl/testdata/bench/occurrences.jsonl -n 200000

run: build ## Until the operator exists: validate the samples and evaluate occurrences with oarctl.
	$(OARCTL) validate --capability config/samples/oar/capability.yaml config/samples/oar/rules.yaml config/samples/oar/config.yaml
	@for o in config/samples/oar/occurrence-*.json; do \
		echo "--- $$o"; \
		$(OARCTL) eval --capability config/samples/oar/capability.yaml --rules config/samples/oar/rules.yaml \
			--config config/samples/oar/config.yaml --occurrence $$o; \
	done

clean: ## Remove built binaries.
	rm -rf $(BIN)
