package report

import (
	"encoding/json"
	"time"

	"github.com/timebudget/budget"
)

// Report holds every figure the demo measured. report.json is this value;
// the table and report.html are rendered from it, so the three always agree.
type Report struct {
	// Version is the format of report.json, raised when a field changes
	// meaning; GeneratedAt is when the run ended (RFC 3339, UTC).
	Version     int    `json:"version"`
	GeneratedAt string `json:"generated_at"`
	// Config is what the run was asked to do; Notes say, in sentences,
	// what was scaled and how the figures were measured.
	Config Config   `json:"config"`
	Notes  []string `json:"notes"`
	// Verdict says in a sentence per scenario, and one for the overload
	// case, what the run measured (Verdict computes it from the figures
	// below): the report's opening box.
	Verdict []string `json:"verdict"`
	// Scenarios are geo and checkout as they ran, in that order;
	// Overload is the overload case, nil when it did not run.
	Scenarios []Scenario `json:"scenarios"`
	Overload  *Overload  `json:"overload,omitempty"`
	// Ledgers are spend ledgers of single requests of the admission pattern:
	// the first one (before the Ops had measurements) and the last one.
	Ledgers []Ledger `json:"ledgers,omitempty"`
}

// Config is what the run was asked to do, so a report can be
// reproduced: the flags, and the load generator's own cut-off.
type Config struct {
	// BudgetMs is the time a user waits for one request (--budget).
	BudgetMs float64 `json:"budget_ms"`
	// Requests and Concurrency are per pattern and scenario (--requests,
	// --concurrency); the overload case has its own rate.
	Requests    int `json:"requests"`
	Concurrency int `json:"concurrency"`
	// Fault is --fault as the demo understood it, in --fault's syntax.
	Fault     string   `json:"fault"`
	Scenarios []string `json:"scenarios"`
	// SafetyLimitMs is when the load generator cuts a request off: only
	// the no-timeout pattern reaches it, and its latencies are then this
	// limit, not a measurement.
	SafetyLimitMs float64 `json:"safety_limit_ms"`
	// WallSeconds is how long the whole run took.
	WallSeconds float64 `json:"wall_s"`
}

// Scenario is one scenario: its path, what it shows, its
// dependencies and faults, and what each pattern measured on it.
type Scenario struct {
	// Name is the scenario's key (--scenario), Title its path of stages,
	// Story the question it asks and how each pattern goes about it.
	Name  string `json:"name"`
	Title string `json:"title"`
	Story string `json:"story"`
	// Narrative says what each pattern did and which did best, in
	// sentences computed from the figures below (Narrate).
	Narrative []string `json:"narrative"`
	// PerCallTimeoutMs is the per-call timeouts pattern's timeout of each
	// hop, and PerCallRule how it derives from the budget.
	PerCallTimeoutMs float64 `json:"per_call_timeout_ms"`
	PerCallRule      string  `json:"per_call_rule"`
	// Dependencies are the scenario's dependencies with their faults.
	Dependencies []Dependency `json:"dependencies"`
	// Database says whether the database hop ran in this scenario (and how
	// to enable it when it did not); empty for a scenario without one.
	Database string    `json:"database,omitempty"`
	Patterns []Pattern `json:"patterns"`
}

// Database is what the database hop measured under one pattern.
type Database struct {
	// Statements were sent to PostgreSQL; Answered came back with a result.
	Statements int `json:"statements"`
	Answered   int `json:"answered"`
	// CallerLeft counts statements whose caller gave up (deadline,
	// cancellation or a server-side timeout) before an answer.
	CallerLeft int `json:"caller_left"`
	// RanOn counts those the server went on executing after the caller left.
	RanOn int `json:"ran_on"`
	// AfterCallerLeftMs is, over the statements whose caller gave up, how
	// long the server went on executing each after its caller left, as
	// pg_stat_activity showed every 5 ms (nearest-rank quantiles).
	AfterCallerLeftMs Latency `json:"after_caller_left_ms"`
	// TotalAfterCallerLeftMs is that time summed.
	TotalAfterCallerLeftMs float64 `json:"after_caller_left_total_ms"`
}

// Dependency is one dependency of a scenario as the run configured it.
type Dependency struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"` // HTTP or gRPC
	// TypMs is its typical latency without a fault, give or take 20%.
	TypMs float64 `json:"typical_ms"`
	// Cascade says whether its work stops when its caller leaves; when it
	// does not, only a deadline handed over with the work stops it early.
	Cascade bool   `json:"stops_when_caller_leaves"`
	Fault   string `json:"fault"`
	// FaultMeans says in words what the fault did.
	FaultMeans string `json:"fault_means"`
}

// Latency is the time to answer or fail, as the user saw it, in
// milliseconds, by the nearest-rank method (budgettest.Quantile).
type Latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Pattern is what one pattern measured on one scenario.
type Pattern struct {
	Name  string `json:"name"`
	Key   string `json:"key"`
	About string `json:"about"`
	// BudgetMs is the time the user is willing to wait. Only the budget
	// patterns enforce it; the others are measured against it.
	BudgetMs         float64 `json:"budget_ms"`
	PerCallTimeoutMs float64 `json:"per_call_timeout_ms,omitempty"`
	Requests         int     `json:"requests"`
	// LatencyMs is the time to answer or fail, as the user saw it.
	LatencyMs Latency `json:"latency_ms"`
	// AnsweredRatio is the share answered within the budget; LateRatio the
	// share answered after it (the user had left); FailedRatio the rest,
	// cut-off requests included.
	AnsweredRatio float64 `json:"answered_ratio"`
	LateRatio     float64 `json:"answered_late_ratio"`
	FailedRatio   float64 `json:"failed_ratio"`
	CutOff        int     `json:"cut_off"`
	// FailureCostMs is the median time a failed request took to fail, as
	// the user saw it: what an honest failure costs. Zero when none failed.
	FailureCostMs float64 `json:"failure_cost_ms"`
	// Rungs counts which rung of the last stage gave each answer.
	Rungs map[string]int `json:"rungs"`
	// RefusalsByStage counts attempts refused before they started.
	RefusalsByStage map[string]int `json:"refusals_by_stage"`
	// FailuresByStage counts failed requests by the stage that failed, and
	// FailureReasons by why (timeout, refused, failed, cut-off).
	FailuresByStage map[string]int `json:"failures_by_stage"`
	FailureReasons  map[string]int `json:"failure_reasons"`
	// WastedWorkMs is the time dependencies kept working after their caller
	// had gone, as measured by the dependencies.
	WastedWorkMs             float64            `json:"wasted_work_ms"`
	WastedWorkByDependencyMs map[string]float64 `json:"wasted_work_by_dependency_ms"`
	DependencyCalls          map[string]int64   `json:"dependency_calls"`
	WallSeconds              float64            `json:"wall_s"`
	// Database is the database hop's figures, when it ran.
	Database *Database `json:"database,omitempty"`
}

// Overload is the overload case: its configuration (times already
// scaled by Scale) and what each variant measured while the dependency was
// slow.
type Overload struct {
	// Scale is the factor applied to the case's full-size times (50 ms →
	// 5 s); Workers the service's pool; RatePerSecond the fixed arrival
	// rate; SlowShare the share of requests that call the slow dependency.
	Scale         float64 `json:"time_scale"`
	Workers       int     `json:"workers"`
	RatePerSecond float64 `json:"rate_per_s"`
	SlowShare     float64 `json:"slow_share"`
	// DependencyFromMs and DependencyToMs are the slow dependency's latency
	// before and while it is slow; BudgetMs the user's budget;
	// UpstreamTimeoutMs the caller's own timeout and PerCallTimeoutMs the
	// service's, in the variants without a budget; MeasuredForMs how long
	// the dependency is slow, the time goodput is measured over.
	DependencyFromMs  float64 `json:"dependency_from_ms"`
	DependencyToMs    float64 `json:"dependency_to_ms"`
	BudgetMs          float64 `json:"budget_ms"`
	UpstreamTimeoutMs float64 `json:"upstream_timeout_ms"`
	PerCallTimeoutMs  float64 `json:"per_call_timeout_ms"`
	MeasuredForMs     float64 `json:"measured_for_ms"`
	// Goodput is the share of the requests that do not touch the slow
	// dependency answered within the budget while it was slow.
	Goodput Goodput `json:"goodput"`
	// Variants are what each way of calling the dependency measured.
	Variants []Variant `json:"variants"`
}

// Goodput compares the budget with the code without one. WithoutBudgets
// is the best of the variants without a budget, so the comparison is with
// careful code, not only with the bug.
type Goodput struct {
	// WithBudgets is the budget variant's goodput, WithoutBudgets the best
	// of the others', ByVariant every variant's by key.
	WithBudgets    float64            `json:"with_budgets"`
	WithoutBudgets float64            `json:"without_budgets"`
	ByVariant      map[string]float64 `json:"by_variant"`
}

// Variant is what one overload variant measured: the goodput
// and p99 of the requests that never call the slow dependency, and the cost
// of the ones that do (worker time held after their user had left, work the
// dependency did for nobody, calls refused before they started).
type Variant struct {
	// Name, Key and About name the variant for a table, for report.json
	// and in a sentence.
	Name  string `json:"name"`
	Key   string `json:"key"`
	About string `json:"about"`
	// Goodput is the share of the other requests answered within the
	// budget, and OtherP99Ms their p99; SlowAnsweredRatio the share of the
	// slow dependency's callers answered within it.
	Goodput           float64 `json:"goodput"`
	SlowAnsweredRatio float64 `json:"slow_answered_ratio"`
	OtherP99Ms        float64 `json:"other_p99_ms"`
	// WorkerSecondsLate is the worker time held after users had left,
	// DependencyWastedMs the work the dependency did for nobody, and
	// RefusedBeforeStarting the calls admission refused before they began.
	WorkerSecondsLate     float64 `json:"worker_s_after_deadline"`
	DependencyWastedMs    float64 `json:"dependency_wasted_work_ms"`
	RefusedBeforeStarting int64   `json:"refused_before_starting"`
	// OtherRequests and SlowRequests count what was sent of each kind.
	OtherRequests int `json:"other_requests"`
	SlowRequests  int `json:"slow_requests"`
}

// Ledger is one request's spend ledger: its JSON and text as the root
// package renders them, and its events for the charts and the terminal.
type Ledger struct {
	// Scenario and Request say which request of the admission pattern this
	// is, and Label why it was picked.
	Scenario string `json:"scenario"`
	Request  int    `json:"request"`
	Label    string `json:"label"`
	// Ledger is the ledger's JSON, and Text its text, as the root
	// package renders them.
	Ledger json.RawMessage `json:"ledger"`
	Text   string          `json:"text"`
	// Events, Budget and Start are the ledger's own, for the charts and
	// the terminal; report.json has them in Ledger already.
	Events []budget.Event `json:"-"`
	Budget time.Duration  `json:"-"`
	Start  time.Time      `json:"-"`
}
