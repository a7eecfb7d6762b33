package demo

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/timebudget/budget/cmd/budget/internal/format"
	"github.com/timebudget/budget/cmd/budget/internal/overload"
	"github.com/timebudget/budget/cmd/budget/internal/report"
	"github.com/timebudget/budget/httpbudget"
)

// The relations below hold with wide margins, so they pass on a loaded
// machine and under the race detector: each compares patterns measured in the
// same run, or a latency against a bound with generous slack.

const testBudget = 100 * time.Millisecond

// smallOverload is the overload case at a tenth of its full-size times with a
// tenth of the workers, so it takes about a second per variant.
func smallOverload() overload.Config {
	return overload.Config{
		Scale: 0.1, Workers: 20, Rate: 150, SlowShare: 0.8,
		Normal: 200 * time.Millisecond, SlowFor: 800 * time.Millisecond,
		Fast: 5 * time.Millisecond, Slow: 500 * time.Millisecond,
		Budget: 100 * time.Millisecond, Upstream: 200 * time.Millisecond, PerCall: 300 * time.Millisecond,
		Work: 2 * time.Millisecond,
	}
}

var (
	sharedOnce sync.Once
	sharedDir  string // removed by TestMain
	sharedRep  *report.Report
	sharedErr  error
	// sharedPage is the live page of the small run, and sharedProgress what
	// the run printed on its way.
	sharedPage     *httpbudget.DebugPage
	sharedProgress string
)

// smallRun runs the whole demo once at small scale, with a hanging geometry
// dependency and a failing-then-slow payment, and writes its reports; tests
// share the result.
func smallRun(t *testing.T) (*report.Report, string) {
	t.Helper()
	sharedOnce.Do(func() {
		cfg, err := ParseFlags([]string{"--budget", testBudget.String(), "--requests", "40",
			"--concurrency", "10", "--fault", "geometry=hang,payment=hang"})
		if err != nil {
			sharedErr = err
			return
		}
		cfg.overload = smallOverload()
		if sharedDir, err = os.MkdirTemp("", "budget-demo-"); err != nil {
			sharedErr = err
			return
		}
		cfg.Out = sharedDir
		var progress lockedBuffer
		stop := ServeLivePage(cfg, &progress)
		sharedRep, sharedErr = Run(context.Background(), cfg, &progress)
		stop()
		sharedPage, sharedProgress = cfg.page, progress.String()
		if sharedErr == nil {
			_, sharedErr = report.WriteFiles(cfg.Out, sharedRep)
		}
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedRep, sharedDir
}

func patternOf(t *testing.T, rep *report.Report, scenario, key string) report.Pattern {
	t.Helper()
	for _, s := range rep.Scenarios {
		if s.Name != scenario {
			continue
		}
		for _, p := range s.Patterns {
			if p.Key == key {
				return p
			}
		}
	}
	t.Fatalf("no pattern %s in scenario %s", key, scenario)
	return report.Pattern{}
}

func TestHangingDependencyCostsOneBudgetNotTheSumOfTimeouts(t *testing.T) {
	rep, _ := smallRun(t)
	for _, sc := range []string{"geo", "checkout"} {
		shared := patternOf(t, rep, sc, "shared")
		admission := patternOf(t, rep, sc, "admission")
		perCall := patternOf(t, rep, sc, "per-call")
		budgetMs := format.Millis(testBudget)
		// With a hung dependency, per-call timeouts cost at least the
		// timeouts of the hops that hang (two geometry rungs; one payment
		// hop), which is well past the budget.
		hung := 1.0
		if sc == "geo" {
			hung = 2
		}
		floor := hung * perCall.PerCallTimeoutMs
		// The typical request costs at most one budget, plus half a budget
		// and how late this run's machine ends requests: per-call's median
		// past its own floor, measured in the same run, so that a loaded
		// two-core machine under -race, which delays every pattern alike,
		// does not fail the check. The slowest request is not checked:
		// scheduling alone can add a hundred milliseconds to one request.
		slack := budgetMs/2 + max(0, perCall.LatencyMs.P50-floor)
		for _, p := range []report.Pattern{shared, admission} {
			if p.LatencyMs.P50 > budgetMs+slack {
				t.Errorf("%s, %s: the median request took %.0fms, want within the %.0fms budget plus %.0fms",
					sc, p.Name, p.LatencyMs.P50, budgetMs, slack)
			}
		}
		if perCall.LatencyMs.P50 < floor || perCall.LatencyMs.P50 > floor+budgetMs {
			t.Errorf("%s, per-call timeouts: p50 %.0fms, want about %.0fms (the hung hops' timeouts, plus the others' work)",
				sc, perCall.LatencyMs.P50, floor)
		}
		if perCall.LatencyMs.P50 < shared.LatencyMs.P50+budgetMs/4 {
			t.Errorf("%s: per-call p50 %.0fms is not well above shared-deadline p50 %.0fms",
				sc, perCall.LatencyMs.P50, shared.LatencyMs.P50)
		}
	}
}

func TestNoTimeoutIsCutOffAndReportedAsSuch(t *testing.T) {
	rep, _ := smallRun(t)
	none := patternOf(t, rep, "geo", "none")
	if none.CutOff != none.Requests {
		t.Errorf("no timeout: %d of %d requests cut off, want all", none.CutOff, none.Requests)
	}
	if limit := rep.Config.SafetyLimitMs; none.LatencyMs.P50 < limit {
		t.Errorf("no timeout: p50 %.0fms, want the safety limit %.0fms", none.LatencyMs.P50, limit)
	}
}

func TestAdmissionLetsTheCacheAnswer(t *testing.T) {
	rep, _ := smallRun(t)
	shared := patternOf(t, rep, "geo", "shared")
	admission := patternOf(t, rep, "geo", "admission")
	// The hung rung eats most of a shared deadline. Each hop answers a
	// little before its caller's deadline (the answer margin), so the cache
	// sometimes still has the millisecond it needs: from run to run 0 to
	// about 40 % of these requests answer in budget, never most of them.
	if shared.AnsweredRatio > 0.5 {
		t.Errorf("shared deadline answered %.0f%% within the budget, want a minority: the hung rung eats the budget", 100*shared.AnsweredRatio)
	}
	// On a machine starved of CPU (a load of 12 on 2 cores, with the race
	// detector), the hops before the ladder can take most of a 100 ms
	// budget, and admission then rightly refuses those requests before they
	// reach the ladder at all. What admission promises is about the requests
	// that reach it, so the claims below are made for those, measured in the
	// same run; a run where most never reached the ladder says only that
	// (seen once with four busy loops beside the test: 0 of 40 reached it,
	// refused at retrieve, and the shared deadline answered none either).
	reached := admission.Requests - admission.FailuresByStage["resolve"] - admission.FailuresByStage["retrieve"]
	t.Logf("deadline + admission: %d of %d requests reached the geometry ladder; cache answered %d, %.0f%% in budget (shared %.0f%%); refusals %v, failures %v",
		reached, admission.Requests, admission.Rungs["cache"], 100*admission.AnsweredRatio, 100*shared.AnsweredRatio,
		admission.RefusalsByStage, admission.FailuresByStage)
	if reached >= 10 && admission.RefusalsByStage["geometry.exact"] == 0 {
		t.Errorf("deadline + admission: the hung exact rung was never refused in %d requests that reached it", reached)
	}
	if admission.Rungs["cache"] < reached*3/4 {
		t.Errorf("deadline + admission: cache answered %d of the %d requests that reached the ladder", admission.Rungs["cache"], reached)
	}
	if reached < admission.Requests*3/4 {
		return
	}
	// How many of the cache's answers land inside the budget depends on how
	// busy the machine is (65 % was seen at a load of 7 on 2 cores); that
	// admission hands the requests to the cache does not.
	if admission.AnsweredRatio < shared.AnsweredRatio+0.25 {
		t.Errorf("deadline + admission answered %.0f%% within the budget, not well above the shared deadline's %.0f%%",
			100*admission.AnsweredRatio, 100*shared.AnsweredRatio)
	}
}

func TestBudgetsWasteLittleWork(t *testing.T) {
	rep, _ := smallRun(t)
	for _, sc := range []string{"geo", "checkout"} {
		perCall := patternOf(t, rep, sc, "per-call")
		none := patternOf(t, rep, sc, "none")
		without := min(perCall.WastedWorkMs, none.WastedWorkMs)
		if without < 100 {
			t.Errorf("%s: without budgets only %.0fms of work was wasted; the non-cascading dependency should waste much more", sc, without)
		}
		for _, key := range []string{"shared", "admission"} {
			p := patternOf(t, rep, sc, key)
			if p.WastedWorkMs > without/10 {
				t.Errorf("%s, %s: %.0fms of wasted work, want under a tenth of the %.0fms without budgets",
					sc, p.Name, p.WastedWorkMs, without)
			}
		}
	}
}

func TestOverloadGoodput(t *testing.T) {
	rep, _ := smallRun(t)
	o := rep.Overload
	if o == nil {
		t.Fatal("no overload case in the report")
	}
	with := o.Goodput.WithBudgets
	if with < 0.8 {
		t.Errorf("goodput with budgets %.0f%%, want at least 80%%", 100*with)
	}
	for _, key := range []string{"no-timeout", "common-bug"} {
		if g := o.Goodput.ByVariant[key]; with < g+0.3 {
			t.Errorf("goodput with budgets %.0f%% is not well above %s's %.0f%%", 100*with, key, 100*g)
		}
	}
	for _, key := range []string{"careful", "failsafe-go"} {
		g, ok := o.Goodput.ByVariant[key]
		if !ok {
			t.Errorf("no %s variant in the overload case", key)
		}
		if with < g-0.1 {
			t.Errorf("goodput with budgets %.0f%% is below %s's %.0f%%", 100*with, key, 100*g)
		}
	}
}

func TestReportJSONHoldsTheFigures(t *testing.T) {
	_, dir := smallRun(t)
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Scenarios []struct {
			Name     string
			Patterns []map[string]json.RawMessage
		}
		Overload struct {
			Goodput map[string]json.RawMessage
		}
		Ledgers []map[string]json.RawMessage
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Scenarios) != 2 {
		t.Fatalf("%d scenarios in report.json, want 2", len(got.Scenarios))
	}
	for _, s := range got.Scenarios {
		if len(s.Patterns) != 4 {
			t.Errorf("%s: %d patterns, want 4", s.Name, len(s.Patterns))
		}
		for _, p := range s.Patterns {
			for _, k := range []string{"name", "budget_ms", "latency_ms", "answered_ratio", "wasted_work_ms", "refusals_by_stage"} {
				if _, ok := p[k]; !ok {
					t.Errorf("%s: a pattern lacks %q", s.Name, k)
				}
			}
			var lat map[string]float64
			if err := json.Unmarshal(p["latency_ms"], &lat); err != nil || len(lat) != 3 {
				t.Errorf("%s: latency_ms = %s, want p50, p99 and max", s.Name, p["latency_ms"])
			}
		}
	}
	for _, k := range []string{"with_budgets", "without_budgets"} {
		if _, ok := got.Overload.Goodput[k]; !ok {
			t.Errorf("overload goodput lacks %q", k)
		}
	}
	if len(got.Ledgers) == 0 {
		t.Error("report.json has no spend ledger")
	}
}

// lockedBuffer is an io.Writer safe for the progress line's concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// TestTerminalOutputFitsIn100Columns checks that every line the demo prints
// for a run of 40 requests per pattern, every scenario included, fits in a
// terminal of 100 columns.
func TestTerminalOutputFitsIn100Columns(t *testing.T) {
	t.Parallel()
	rep, _ := smallRun(t)
	var out strings.Builder
	report.WriteTable(&out, rep)
	lines := 0
	for line := range strings.Lines(out.String()) {
		lines++
		line = strings.TrimSuffix(line, "\n")
		if n := utf8.RuneCountInString(line); n > report.TermWidth {
			t.Errorf("%d columns: %s", n, line)
		}
	}
	if lines < 40 {
		t.Errorf("only %d lines printed; the table is missing parts:\n%s", lines, out.String())
	}
}

// The demo serves a live /debug/budget page while it runs: it prints the
// address, and the page shows the admission pattern's Ops and the waterfalls
// of the requests they refused or that expired.
func TestLivePageShowsTheAdmissionOps(t *testing.T) {
	smallRun(t)
	if !strings.Contains(sharedProgress, "live: http://127.0.0.1:") {
		t.Fatalf("the run did not print the live page's address:\n%s", sharedProgress)
	}
	rec := httptest.NewRecorder()
	sharedPage.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/budget?format=json", nil))
	var page struct {
		Ops []struct {
			Name string `json:"name"`
		} `json:"ops"`
		Recent []json.RawMessage `json:"recent"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("page: %d, %v\n%s", rec.Code, err, rec.Body)
	}
	names := map[string]bool{}
	for _, op := range page.Ops {
		names[op.Name] = true
	}
	for _, want := range []string{"resolve", "geometry.exact", "geometry.cache"} {
		if !names[want] {
			t.Errorf("the page lacks op %s: %v", want, names)
		}
	}
	if len(page.Recent) == 0 {
		t.Error("the page shows no refused or expired request")
	}
}
