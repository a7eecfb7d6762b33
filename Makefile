# make test: every guard, every module's tests (with -race), the release check,
#            and every module again as a user outside the workspace sees it
#            (tested with -short; the root module, which requires nothing,
#            built and vetted). Every step runs even after one fails; the run
#            ends with every failure by name and one line "N passed, N failed,
#            N skipped", and exits non-zero if anything failed.
# make test-services: the same, with the local PostgreSQL, MariaDB and
#            RabbitMQ at their default addresses (CI=true implies it).
# make release-check: only the release check (see RELEASING.md).
# make bench: the benchmarks whose figures BENCHMARKS.md reports.
SHELL := /bin/bash
.SHELLFLAGS := -u -o pipefail -c

# The integration tests of pgxbudget, sqlbudget, amqpbudget, cmd/budget and
# examples/service run against the servers these variables name. Outside CI an
# unset or empty variable means "skip those tests" (each says which variable to
# set); under CI=true, or with make test-services, they get the machine's
# defaults below and the tests fail if a server is missing.
ifeq ($(CI),true)
SERVICES := 1
endif
ifdef SERVICES
export BUDGET_TEST_POSTGRES ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable
export BUDGET_TEST_MYSQL ?= root@tcp(127.0.0.1:3306)/test
export BUDGET_TEST_AMQP ?= amqp://guest:guest@127.0.0.1:5672/
endif

MODULES := $(shell find . -name go.mod -not -path './out/*' -not -path './.test-summary/*' -printf '%h\n' | sort)
# Every module's packages, for the guards: in the workspace one go command
# takes them all and loads what the modules share once.
PACKAGES := $(addsuffix /...,$(MODULES))
GOTEST_FLAGS ?= -race -shuffle=on -count=1 -timeout=8m

STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(shell command -v staticcheck 2>/dev/null || echo "go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)")

.PHONY: test test-services guards fmt-check vet lint root-stdlib unit recovery unit-nowork release-check summary bench

# Each module's go test -json goes through .ci/gotest.awk, which prints what
# plain go test prints and keeps the counts and the failures' names here for
# the closing summary.
SUMMARY_DIR := $(CURDIR)/.test-summary
FAILURES := $(SUMMARY_DIR)/failures
GOTEST_FILTER = awk -v skips=$(SUMMARY_DIR)/skips -v counts=$(SUMMARY_DIR)/counts -v failures=$(FAILURES) -v module=$$m -f $(CURDIR)/.ci/gotest.awk

# The directory module proxy the release check writes: the released versions
# that unit-nowork's modules require.
PROXY_DIR := $(SUMMARY_DIR)/proxy
NOWORK_ENV = GOWORK=off GOFLAGS= GOPROXY=file://$(PROXY_DIR),$$(go env GOPROXY) GONOSUMDB=github.com/timebudget/budget

# failed NAME records a failure by name for the summary; it never stops the run.
failed = { echo "$(1)" >> $(FAILURES); }

# permodule CMD,NAME, after CMD failed over every module at once, runs CMD in
# each module on its own to record the failure by module ("NAME ./dir"), or
# as NAME alone when no module fails on its own.
permodule = n=$$(wc -l < $(FAILURES)); for m in $(MODULES); do (cd $$m && $(1) >/dev/null 2>&1) || $(call failed,$(2) $$m); done; \
	[ $$(wc -l < $(FAILURES)) -gt $$n ] || $(call failed,$(2))

test:
	@rm -rf $(SUMMARY_DIR); mkdir -p $(SUMMARY_DIR); touch $(FAILURES) $(SUMMARY_DIR)/counts
	@$(MAKE) --no-print-directory guards unit recovery release-check unit-nowork; \
	$(MAKE) --no-print-directory summary

test-services:
	@$(MAKE) --no-print-directory test SERVICES=1

guards: fmt-check vet lint root-stdlib

fmt-check:
	@mkdir -p $(SUMMARY_DIR); out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; $(call failed,guard: gofmt); else echo "guard: gofmt clean"; fi

vet:
	@mkdir -p $(SUMMARY_DIR); touch $(FAILURES); if go vet $(PACKAGES); then echo "guard: go vet clean"; \
	else $(call permodule,go vet ./...,guard: go vet); fi

# staticcheck with every check on (staticcheck.conf says which are off and
# why): each finding it reports is worth fixing, so the lint must stay clean.
lint:
	@mkdir -p $(SUMMARY_DIR); touch $(FAILURES); if $(STATICCHECK) $(PACKAGES); then echo "guard: staticcheck clean"; \
	else $(call permodule,$(STATICCHECK) ./...,guard: staticcheck); fi

# The root module is a promise: no requirements, and nothing outside the standard library.
root-stdlib:
	@mkdir -p $(SUMMARY_DIR); if grep -Eq '^[[:space:]]*require' go.mod; then echo "root go.mod must have no require lines"; $(call failed,guard: root go.mod has requirements); fi; \
	bad=$$(GOWORK=off go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./... | grep -v '^github.com/timebudget/budget' || true); \
	if [ -n "$$bad" ]; then echo "root module imports non-stdlib packages:"; echo "$$bad"; $(call failed,guard: root module imports non-stdlib packages); \
	else echo "guard: root module is stdlib-only"; fi

# The packages in ALONE run on their own, after the rest of their module:
# cmd/budget's demo tests measure real requests on loopback against 100 ms
# budgets, and must not share the machine with the CPU-heavy tests of the
# same module (the analyzers of budget vet, the audit, the simulator). Every
# other package runs as go test runs them, two at a time on two cores.
ALONE := github.com/timebudget/budget/cmd/budget/internal/demo
# The race detector's runtime sleeps a second before a test binary exits
# (GORACE's atexit_sleep_ms), so that goroutines still running could report
# a race: a second per package. The main pass turns that sleep off. Races
# during the tests are reported as before, and a goroutine still running at
# exit is a failure already: every package whose code or tests start
# goroutines checks in its TestMain that none is left (goleak,
# internal/leakcheck).
RACE_ENV = GORACE="$${GORACE:+$$GORACE }atexit_sleep_ms=0"

# gotest DIR,ARGS,FILTER-OPERANDS,NAME runs go test ARGS in DIR through the
# filter; a go test that fails without a failing test (a build error, a
# panic, a timeout) is recorded as NAME.
gotest = n=$$(wc -l < $(FAILURES)); (cd $(1) && go test -json $(2) 2>&1 | $(GOTEST_FILTER) $(3)) || \
	{ [ $$(wc -l < $(FAILURES)) -gt $$n ] || $(call failed,$(4)); }

unit:
	@mkdir -p $(SUMMARY_DIR); touch $(FAILURES); export $(RACE_ENV); for m in $(MODULES); do echo "== go test $$m"; \
		alone=$$(cd $$m && go list ./... 2>/dev/null | grep -xF $(addprefix -e ,$(ALONE))); rest=./...; \
		[ -z "$$alone" ] || rest=$$(cd $$m && go list ./... | grep -vxF $(addprefix -e ,$(ALONE))); \
		for pkgs in "$$rest" $$alone; do \
			$(call gotest,$$m,$(GOTEST_FLAGS) $$pkgs,,$$m: go test failed (see above)); \
		done; \
	done

# The recovery property test (recovery_test.go) ran above under the race
# detector with 100 generated topologies; without it, 500 take about 15 s on 2 cores,
# so the bound DESIGN.md states is checked over many more draws.
recovery:
	@mkdir -p $(SUMMARY_DIR); touch $(FAILURES); echo "== go test -run TestRecoveryOverGeneratedTopologies -recovery.draws=500 ."; \
	m=.; $(call gotest,.,-count=1 -run '^TestRecoveryOverGeneratedTopologies$$' -recovery.draws=500 -v .,label=recovery,recovery property test failed (see above))

# Install every released module from a directory module proxy, as a user
# outside the repository would (internal/releasecheck; RELEASING.md).
release-check:
	@mkdir -p $(SUMMARY_DIR); echo "== release check"; \
	go run ./internal/releasecheck -proxy $(PROXY_DIR) || $(call failed,release check (go run ./internal/releasecheck))

# Each module must also build and pass on its own, as a user who does not use
# the workspace sees it: GOWORK=off, the budget modules it requires at their
# released versions (from the release check's proxy), everything else as go.sum
# pins it. A module that requires nothing (the root: see root-stdlib) builds
# from the same code with and without the workspace, so its tests, which the
# main pass ran with -race, do not run again: it is built and vetted.
unit-nowork:
	@mkdir -p $(SUMMARY_DIR); touch $(FAILURES); export $(NOWORK_ENV); for m in $(MODULES); do \
		if ! grep -Eq '^[[:space:]]*require' $$m/go.mod; then \
			echo "== GOWORK=off go build, go vet $$m (requires nothing: its tests ran above)"; \
			(cd $$m && go build ./... && go vet ./...) || $(call failed,[nowork] $$m: go build or go vet failed (see above)); \
			continue; \
		fi; \
		echo "== GOWORK=off go test $$m"; \
		$(call gotest,$$m,-count=1 -short -timeout=8m ./...,label=nowork,[nowork] $$m: go test failed (see above)); \
	done

# The closing summary: why tests were skipped (grouped by reason), every
# failure by name, then one line with the counts over every run above. It
# exits non-zero when anything failed.
summary:
	@if [ -s $(SUMMARY_DIR)/skips ]; then cut -f2- $(SUMMARY_DIR)/skips | sort | uniq -c | sort -rn | \
		awk '{ n = $$1; $$1 = ""; sub(/^ /, ""); printf "skipped %d× (%s)\n", n, $$0 }'; fi
	@if [ -s $(FAILURES) ]; then echo "failures:"; sed 's/^/  /' $(FAILURES); fi
	@awk -v f=$$(wc -l < $(FAILURES)) '{ p += $$1; s += $$3 } END { printf "%d passed, %d failed, %d skipped\n", p, f, s }' $(SUMMARY_DIR)/counts
	@[ ! -s $(FAILURES) ]

bench:
	@for m in $(MODULES); do (cd $$m && go test -run='^$$' -bench=. -benchmem ./...) || exit 1; done
