# make test: every guard and every module's tests (with -race), as CI runs them.
# make bench: the benchmarks whose figures BENCHMARKS.md reports.
SHELL := /bin/bash

# The integration tests of pgxbudget, sqlbudget and amqpbudget run against
# these servers (override them, or unset them to skip those tests outside CI).
export BUDGET_TEST_POSTGRES ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable
export BUDGET_TEST_MYSQL ?= root@tcp(127.0.0.1:3306)/test
export BUDGET_TEST_AMQP ?= amqp://guest:guest@127.0.0.1:5672/
.SHELLFLAGS := -eu -o pipefail -c

MODULES := $(shell find . -name go.mod -not -path './out/*' -printf '%h\n' | sort)
GOTEST_FLAGS ?= -race -shuffle=on -count=1 -timeout=8m

STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(shell command -v staticcheck 2>/dev/null || echo "go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)")

.PHONY: test guards fmt-check vet lint root-stdlib unit unit-nowork summary bench services

# Each module's go test -json goes through .ci/gotest.awk, which prints what
# plain go test prints and keeps the counts here for the closing summary.
SUMMARY_DIR := $(CURDIR)/.test-summary
GOTEST_FILTER = awk -v skips=$(SUMMARY_DIR)/skips -v counts=$(SUMMARY_DIR)/counts -f $(CURDIR)/.ci/gotest.awk

test: guards
	@rm -rf $(SUMMARY_DIR)
	@$(MAKE) --no-print-directory unit unit-nowork
	@$(MAKE) --no-print-directory summary

guards: fmt-check vet lint root-stdlib

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi; \
	echo "guard: gofmt clean"

vet:
	@for m in $(MODULES); do (cd $$m && go vet ./...) || exit 1; done; echo "guard: go vet clean"

# staticcheck with every check on (staticcheck.conf says which are off and
# why): each finding it reports is worth fixing, so the lint must stay clean.
lint:
	@for m in $(MODULES); do (cd $$m && $(STATICCHECK) ./...) || exit 1; done; echo "guard: staticcheck clean"

# The root module is a promise: no requirements, and nothing outside the standard library.
root-stdlib:
	@if grep -Eq '^[[:space:]]*require' go.mod; then echo "root go.mod must have no require lines"; exit 1; fi
	@bad=$$(GOWORK=off go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./... | grep -v '^github.com/timebudget/budget' || true); \
	if [ -n "$$bad" ]; then echo "root module imports non-stdlib packages:"; echo "$$bad"; exit 1; fi; \
	echo "guard: root module is stdlib-only"

# cmd/budget's demo tests measure real requests on loopback against 100 ms
# budgets; its packages run one at a time so that the CPU-heavy analyzer tests
# of budget vet do not starve them.
unit:
	@mkdir -p $(SUMMARY_DIR); for m in $(MODULES); do echo "== go test $$m"; p=""; [ "$$m" = ./cmd/budget ] && p="-p 1"; \
		(cd $$m && go test $(GOTEST_FLAGS) $$p -json ./... | $(GOTEST_FILTER)) || exit 1; done

# Each module must also build and pass on its own, as a user who does not use the
# workspace sees it (nested modules reach the root through their replace directive).
unit-nowork:
	@mkdir -p $(SUMMARY_DIR); for m in $(MODULES); do echo "== GOWORK=off go test $$m"; (cd $$m && GOWORK=off go test -count=1 -short -timeout=8m -json ./... | $(GOTEST_FILTER)) || exit 1; done

# The closing summary: why tests were skipped (grouped by reason), then one
# line with the counts of top-level tests over every run above.
summary:
	@if [ -s $(SUMMARY_DIR)/skips ]; then cut -f2- $(SUMMARY_DIR)/skips | sort | uniq -c | sort -rn | \
		awk '{ n = $$1; $$1 = ""; sub(/^ /, ""); printf "skipped %d× (%s)\n", n, $$0 }'; fi
	@awk '{ p += $$1; f += $$2; s += $$3 } END { printf "%d passed, %d failed, %d skipped\n", p, f, s }' $(SUMMARY_DIR)/counts

bench:
	@for m in $(MODULES); do (cd $$m && go test -run='^$$' -bench=. -benchmem ./...) || exit 1; done
