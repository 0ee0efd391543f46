# mulligan's build. `make demo` and `make test` are the README's two set-up commands.
GO      ?= go
BIN     ?= bin/mulligan
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/mulligan-dev/mulligan/cmd.Version=$(VERSION)
# urfave/cli's man and markdown generators (and their markdown library) are not used: left out,
# they cost every start-up an initialiser and 200 KB of heap.
TAGS    := urfave_cli_no_docs

.PHONY: build install test test-short bench demo lint stress clean

build:
	@mkdir -p $(dir $(BIN))
	$(GO) build -tags $(TAGS) -ldflags "$(LDFLAGS)" -o $(BIN) .

# The whole suite: unit tests, fuzz seed corpora, the git compatibility matrix, the testscript
# end-to-end scripts and the real agent CLIs. Slow suites (100k files, crash loops) live in
# bench/stress. A script spends much of its time waiting on its subprocesses (an agent's
# backoff, a heartbeat, a Node CLI's start-up), so scripts run four at a time, not one per core.
PARALLEL ?= 4

test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m -parallel $(PARALLEL) ./...

# The short lane: no 100 MB files, no real agent CLIs, no watched compatibility matrix.
test-short:
	$(GO) test -short -parallel $(PARALLEL) ./...

# Benchmarks: in-package Go benchmarks, then mulligan against the git CLI on the same generated
# trees in one run, printed as medians, ratios and peak RSS.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	MULLIGAN_BENCH=1 MULLIGAN_BENCH_BIN=$(abspath $(BIN)) $(GO) test -count=1 -timeout 60m -run '^TestCompareWithGit$$' -v ./snapshot/
	MULLIGAN_BENCH=1 $(GO) test -count=1 -timeout 60m -run '^TestWorktreeSetupCost$$' -v ./snapshot/
	MULLIGAN_BENCH=1 MULLIGAN_BENCH_BIN=$(abspath $(BIN)) $(GO) test -count=1 -timeout 60m -run '^TestRunOverhead$$' -v .

# The crash loop: a run with retries, hooks and side effects killed with SIGKILL at random
# moments and resumed until it ends, then checked (state, the operator's files, the database,
# every hook delivered, every effect recorded); and a run of parallel isolated tasks and a best_of
# race killed the same way and in the middle of its applies (every directory whole, no lost
# update). MULLIGAN_STRESS_ITERATIONS, MULLIGAN_STRESS_SEED.
stress:
	MULLIGAN_STRESS=1 $(GO) test -count=1 -timeout 60m -run '^TestCrashLoop(Isolated)?$$' -v .

# make demo KEEP=1 keeps the demo's repository and says where it is.
demo: build
	$(GO) build -o bin/demoagent ./testdata/demoagent
	@bash testdata/demo/demo.sh $(abspath $(BIN)) $(abspath bin/demoagent) $(if $(KEEP),--keep)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin
