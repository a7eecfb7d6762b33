# make test: every guard, every module's tests (with -race), the release check,
#            and every module again as a user outside the workspace sees it
#            (tested with -short; the root module, which requires nothing,
#            built and vetted), JOBS (3) steps at a time. Every step runs even
#            after one fails; the run ends with each step's time, every failure
#            by name and one line "N passed, N failed, N skipped", and exits
#            non-zero if anything failed.
# make test-services: the same, with the local PostgreSQL, MariaDB and
#            RabbitMQ at their default addresses (CI=true implies it).
# make STEP: one step of make test alone, such as make unit/pgxbudget,
#            make nowork/compare (its proxy step first), make lint or make demo
#            (STEPS below lists them); make summary then sums it up.
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

# make test runs its steps JOBS at a time (make -j): each step is one go
# command or a few, most of them waiting on loopback, sleeps and servers
# rather than on the CPU, so three at a time finish sooner than one at a time
# on two cores. JOBS=1 runs them one after another.
JOBS ?= 3

# The steps, by name. A module is named by its directory ("root" for the
# repository's root): unit/DIR is its main pass (with -race), nowork/DIR its
# pass outside the workspace.
module_name = $(if $(filter .,$(1)),root,$(patsubst ./%,%,$(1)))
module_dir = $(if $(filter root,$(1)),.,./$(1))
MODULE_NAMES := $(foreach m,$(MODULES),$(call module_name,$(m)))

# The modules whose tests measure real time on loopback against budgets of a
# few hundred milliseconds (gRPC and Connect hops, the end-to-end chains, the
# SQL drivers' cancels 60 ms before a deadline, pgxbudget's expiries of
# hundreds of statements at once): they run last, one at a time
# and beside no other step, then cmd/budget's demo package (ALONE below) on
# its own. Every other step runs JOBS at a time.
SERIAL_MODULES := grpcbudget connectbudget e2e sqlbudget/internal/drivertest pgxbudget
UNIT_STEPS := $(addprefix unit/,$(MODULE_NAMES))
NOWORK_STEPS := $(addprefix nowork/,$(MODULE_NAMES))
GUARD_STEPS := fmt-check vet lint root-stdlib
# The parallel steps in the order they start (make -j starts the
# prerequisites of steps in this order): the longest first, measured under
# load (cmd/budget's main pass about 600 s with the machine shared, compare's
# 420, the conformance suite's 340, the root module's 270, staticcheck's 150,
# the release check's 150), so that none of them starts last; the proxy
# early, so that the nowork steps can start as soon as a slot is free.
FIRST_STEPS := unit/cmd/budget unit/compare lint unit/connectbudget/internal/conformance proxy unit/root release-check vet
PARALLEL_STEPS := $(filter $(UNIT_STEPS) $(NOWORK_STEPS) $(GUARD_STEPS) proxy release-check,$(FIRST_STEPS)) \
	$(filter-out $(FIRST_STEPS) $(addprefix unit/,$(SERIAL_MODULES)),$(UNIT_STEPS)) recovery fmt-check root-stdlib \
	$(filter-out $(FIRST_STEPS) $(addprefix nowork/,$(SERIAL_MODULES)),$(NOWORK_STEPS))
SERIAL_STEPS := $(foreach m,$(filter $(MODULE_NAMES),$(SERIAL_MODULES)),unit/$(m) nowork/$(m)) demo
STEPS := $(PARALLEL_STEPS) $(SERIAL_STEPS)

.PHONY: test test-services steps guards unit unit-nowork release-check summary bench $(STEPS)

# Each step keeps its records in its own directory, .test-summary/jobs/STEP
# (a step's name with / as _), so that steps running at once never write the
# same file: failures (one line per failure, by name), counts (from
# .ci/gotest.awk: passed, failed, skipped) and skips (why tests were skipped),
# and time (when the step started and ended). The summary merges them.
SUMMARY_DIR := $(CURDIR)/.test-summary
JOBS_DIR := $(SUMMARY_DIR)/jobs
LOCKS_DIR := $(SUMMARY_DIR)/locks
FAILURES := $$J/failures
GOTEST_FILTER = awk -v skips=$$J/skips -v counts=$$J/counts -v failures=$(FAILURES) -v module=$$m -f $(CURDIR)/.ci/gotest.awk

# step_begin and step_end enclose every step's commands: they make its records
# directory ($$J), print its name and how long it took, and record a failure by
# the step's name if its commands fail without recording one, so that a step
# never stops the run and the steps after it always run.
step_begin = J=$(JOBS_DIR)/$(subst /,_,$@); rm -rf $$J; mkdir -p $$J $(LOCKS_DIR); touch $$J/failures $$J/counts; \
	t0=$$(date +%s); echo "== $@ (started $$(date -u +%T))"; {
step_end = ; } || { [ -s $$J/failures ] || $(call failed,$@: step failed (see above)); }; \
	t1=$$(date +%s); echo "$$t0 $$t1 $@" > $$J/time; echo "== $@: $$((t1 - t0)) s"

# lock NAME holds the lock NAME until the step ends: a module's main pass and
# its pass outside the workspace share one, so they never run at once.
lock = exec 9>$(LOCKS_DIR)/$(1).lock; flock 9;

# The directory module proxy the proxy step writes: the released versions
# that the nowork steps' modules require.
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
	@rm -rf $(SUMMARY_DIR); mkdir -p $(JOBS_DIR)
	@$(MAKE) --no-print-directory -k -j$(JOBS) --output-sync=target steps || \
		{ mkdir -p $(JOBS_DIR)/make; echo "make: a step did not run, or stopped the run (see above)" > $(JOBS_DIR)/make/failures; }; \
	$(MAKE) --no-print-directory summary

test-services:
	@$(MAKE) --no-print-directory test SERVICES=1

steps: $(STEPS)

# The order of make test: the serial steps start when every parallel step
# has ended, one after another. Only make test (the steps target) orders
# them, so that make unit/e2e, say, runs that step alone.
ifneq ($(filter steps,$(MAKECMDGOALS)),)
$(firstword $(SERIAL_STEPS)): | $(PARALLEL_STEPS)
$(foreach i,$(shell seq 2 $(words $(SERIAL_STEPS))),$(eval $(word $(i),$(SERIAL_STEPS)): | $(word $(shell expr $(i) - 1),$(SERIAL_STEPS))))
endif

guards: $(GUARD_STEPS)
unit: $(UNIT_STEPS) demo
unit-nowork: $(NOWORK_STEPS)

fmt-check:
	@$(step_begin) out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; $(call failed,guard: gofmt); else echo "guard: gofmt clean"; fi $(step_end)

vet:
	@$(step_begin) if go vet $(PACKAGES); then echo "guard: go vet clean"; \
	else $(call permodule,go vet ./...,guard: go vet); fi $(step_end)

# staticcheck with every check on (staticcheck.conf says which are off and
# why): each finding it reports is worth fixing, so the lint must stay clean.
lint:
	@$(step_begin) if $(STATICCHECK) $(PACKAGES); then echo "guard: staticcheck clean"; \
	else $(call permodule,$(STATICCHECK) ./...,guard: staticcheck); fi $(step_end)

# The root module is a promise: no requirements, and nothing outside the standard library.
root-stdlib:
	@$(step_begin) if grep -Eq '^[[:space:]]*require' go.mod; then echo "root go.mod must have no require lines"; $(call failed,guard: root go.mod has requirements); fi; \
	bad=$$(GOWORK=off go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./... | grep -v '^github.com/timebudget/budget' || true); \
	if [ -n "$$bad" ]; then echo "root module imports non-stdlib packages:"; echo "$$bad"; $(call failed,guard: root module imports non-stdlib packages); \
	else echo "guard: root module is stdlib-only"; fi $(step_end)

# The packages in ALONE run on their own, in the demo step at the very end:
# cmd/budget's demo tests measure real requests on loopback against 100 ms
# budgets, and must not share the machine with the CPU-heavy tests of the
# same module (the analyzers of budget vet, the audit, the simulator) or with
# any other step.
ALONE_MODULE := ./cmd/budget
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

# A module's main pass: every package but those in ALONE, with -race.
$(UNIT_STEPS): unit/%:
	@$(step_begin) $(call lock,$(subst /,_,$*)) export $(RACE_ENV); m=$(call module_dir,$*); \
	pkgs=$$(cd $$m && go list ./... | grep -vxF $(addprefix -e ,$(ALONE))) || pkgs=./...; \
	$(call gotest,$$m,$(GOTEST_FLAGS) $$pkgs,,$$m: go test failed (see above)) $(step_end)

demo:
	@$(step_begin) $(call lock,$(subst /,_,$(call module_name,$(ALONE_MODULE)))) export $(RACE_ENV); m=$(ALONE_MODULE); \
	$(call gotest,$$m,$(GOTEST_FLAGS) $(ALONE),,$$m: go test failed (see above)) $(step_end)

# The recovery property test (recovery_test.go) ran above under the race
# detector with 100 generated topologies; without it, 500 take about 15 s on 2 cores,
# so the bound DESIGN.md states is checked over many more draws.
recovery:
	@$(step_begin) m=.; $(call gotest,.,-count=1 -run '^TestRecoveryOverGeneratedTopologies$$' -recovery.draws=500 -v .,label=recovery,recovery property test failed (see above)) $(step_end)

# The directory module proxy of every released version (the tree checked,
# each module zipped from its tag), for the nowork steps.
proxy:
	@$(step_begin) go run ./internal/releasecheck -proxy-only -proxy $(PROXY_DIR) || $(call failed,module proxy (go run ./internal/releasecheck -proxy-only)) $(step_end)

# Install every released module from a directory module proxy (its own,
# removed at the end), as a user outside the repository would
# (internal/releasecheck; RELEASING.md).
release-check:
	@$(step_begin) go run ./internal/releasecheck || $(call failed,release check (go run ./internal/releasecheck)) $(step_end)

# Each module must also build and pass on its own, as a user who does not use
# the workspace sees it: GOWORK=off, the budget modules it requires at their
# released versions (from the proxy step's proxy), everything else as go.sum
# pins it. A module that requires nothing (the root: see root-stdlib) builds
# from the same code with and without the workspace, so its tests, which the
# main pass ran with -race, do not run again: it is built and vetted.
$(NOWORK_STEPS): nowork/%: proxy
	@$(step_begin) $(call lock,$(subst /,_,$*)) export $(NOWORK_ENV); m=$(call module_dir,$*); \
	if ! grep -Eq '^[[:space:]]*require' $$m/go.mod; then \
		echo "GOWORK=off go build, go vet $$m (requires nothing: its tests ran in unit/$*)"; \
		(cd $$m && go build ./... && go vet ./...) || $(call failed,[nowork] $$m: go build or go vet failed (see above)); \
	else \
		$(call gotest,$$m,-count=1 -short -timeout=8m ./...,label=nowork,[nowork] $$m: go test failed (see above)); \
	fi $(step_end)

# The closing summary: how long each step took (longest first), why tests
# were skipped (grouped by reason), every failure by name, then one line with
# the counts over every step. It exits non-zero when anything failed.
summary:
	@cd $(JOBS_DIR) 2>/dev/null || { echo "no steps ran"; exit 1; }; \
	t0=$$(cat */time 2>/dev/null | sort -n | head -n 1 | cut -d' ' -f1); echo "steps (longest first; start and end in seconds from the first start):"; \
	cat */time | while read a b name; do echo "$$((b - a)) $$((a - t0)) $$((b - t0)) $$name"; done | sort -rn | \
		awk '{ printf "  %-40s %4d s  (%d-%d)\n", $$4, $$1, $$2, $$3 }'; \
	skips=$$(for s in $(subst /,_,$(STEPS)); do [ ! -e $$s/skips ] || cat $$s/skips; done); \
	if [ -n "$$skips" ]; then echo "$$skips" | cut -f2- | sort | uniq -c | sort -rn | \
		awk '{ n = $$1; $$1 = ""; sub(/^ /, ""); printf "skipped %d× (%s)\n", n, $$0 }'; fi; \
	failures=$$(for s in $(subst /,_,$(STEPS)) make; do [ ! -e $$s/failures ] || cat $$s/failures; done; \
		for s in $(subst /,_,$(STEPS)); do [ ! -d $$s ] || [ -e $$s/time ] || echo "$$(echo $$s | tr _ /): step did not run to its end"; done); \
	if [ -n "$$failures" ]; then echo "failures:"; echo "$$failures" | sed 's/^/  /'; fi; \
	cat */counts /dev/null | awk -v f=$$(printf '%s' "$$failures" | grep -c .) '{ p += $$1; s += $$3 } END { printf "%d passed, %d failed, %d skipped\n", p, f, s }'; \
	[ -z "$$failures" ]

bench:
	@for m in $(MODULES); do (cd $$m && go test -run='^$$' -bench=. -benchmem ./...) || exit 1; done
