package compare

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/timebudget/budget"
)

// BudgetConfig tunes the budget strategy's [budget.Op] for the dependency.
// Zero fields take the Op's defaults.
type BudgetConfig struct {
	// Prior is the dependency's typical latency, assumed until the Op has
	// measurements.
	Prior time.Duration
	// Cap is the local limit on one call (the careful code's per-call
	// timeout); zero leaves the request's budget alone to bound a call.
	Cap time.Duration
	// Window is the length of each of the estimator's two rotating windows;
	// zero means one second, the estimator's default.
	Window time.Duration
	// ProbeEvery is the interval between probe calls while the estimate
	// refuses calls; zero means the op's default (500 ms).
	ProbeEvery time.Duration
	// Threshold is the probability of finishing in time required to call;
	// zero means the op's default (0.5).
	Threshold float64
}

// Budget starts one budget per request at the user's patience
// ([budget.Start]) and serves it with a two-rung [budget.Ladder]: the
// dependency, admitted by an Op from its measured latency, then the cheap
// fallback, whose time the ladder holds back while the dependency is called.
// A call the Op does not admit is refused before it starts and the fallback
// answers at once.
func Budget(c BudgetConfig) Strategy {
	name := "budget (Op defaults)"
	if c != (BudgetConfig{}) {
		name = "budget (" + c.String() + ")"
	}
	return Strategy{
		Name: name,
		New: func(s Scenario) Handler {
			dep := &budget.Op{Name: "dependency", Prior: c.Prior, Cap: c.Cap,
				ProbeEvery: c.ProbeEvery, Threshold: c.Threshold}
			dep.Estimator.Window = c.Window
			// The fallback is not worth starting with less than it takes, so
			// the ladder holds back at least that much for it.
			fb := &budget.Op{Name: "fallback", Prior: s.FallbackCost, MinUseful: s.FallbackCost}
			return func(ctx context.Context, call, fallback func(context.Context) error) Answer {
				bctx, cancel := budget.Start(ctx, s.Patience)
				defer cancel()
				ladder := budget.Ladder[Answer]{Rungs: []budget.Rung[Answer]{
					{Op: dep, Fn: func(ctx context.Context) (Answer, error) { return Full, call(ctx) }},
					{Op: fb, Fn: func(ctx context.Context) (Answer, error) { return Fallback, fallback(ctx) }},
				}}
				a, _, err := ladder.Do(bctx)
				if err != nil {
					return NoAnswer
				}
				return a
			}
		},
	}
}

// String lists the fields that are set, such as "prior 50ms, window 1s".
func (c BudgetConfig) String() string {
	var parts []string
	add := func(name string, d time.Duration) {
		if d != 0 {
			parts = append(parts, name+" "+d.String())
		}
	}
	add("prior", c.Prior)
	add("cap", c.Cap)
	add("window", c.Window)
	add("probe every", c.ProbeEvery)
	if c.Threshold != 0 {
		parts = append(parts, "threshold "+strconv.FormatFloat(c.Threshold, 'g', -1, 64))
	}
	return strings.Join(parts, ", ")
}

// DefaultBudget is the budget configuration the comparison uses: the Op's
// defaults, with the dependency's usual latency (50 ms) as Prior and the
// careful code's per-call timeout (3 s) as Cap.
var DefaultBudget = BudgetConfig{Prior: 50 * time.Millisecond, Cap: 3 * time.Second}
