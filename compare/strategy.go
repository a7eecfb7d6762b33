package compare

import (
	"context"
	"time"
)

// Answer says what answered a request.
type Answer uint8

// What can answer a request.
const (
	NoAnswer Answer = iota // neither the dependency nor the fallback answered
	Full                   // the dependency answered
	Fallback               // the cheap fallback answered
)

// Handler serves one request. ctx is the request's context: its deadline is
// the user's patience, and it is canceled when the request ends. call makes
// one call to the dependency within the context it is given; fallback
// produces the cheap answer within the context it is given. Both return nil
// on success, and both may be called any number of times, from any
// goroutine, until the handler returns. A Handler is called from many
// goroutines at once.
type Handler func(ctx context.Context, call, fallback func(context.Context) error) Answer

// Strategy is one way of calling the dependency from a request handler.
type Strategy struct {
	// Name identifies the strategy in reports.
	Name string
	// New returns the handler for one run of scenario s. It is called once
	// per run, so state kept between requests (a breaker, an op's
	// measurements) starts afresh.
	New func(s Scenario) Handler
}

// CommonBug is the per-call timeout derived from context.Background: each
// call gets a fresh timer of perCall, whatever the request has left and
// whether or not its user is still waiting. The request waits for the call;
// when the call fails and the user is still there, it answers from the
// fallback.
func CommonBug(perCall time.Duration) Strategy {
	return Strategy{
		Name: "common bug (Background, " + perCall.String() + " per call)",
		New: func(Scenario) Handler {
			return func(ctx context.Context, call, fallback func(context.Context) error) Answer {
				cctx, cancel := context.WithTimeout(context.Background(), perCall)
				err := call(cctx)
				cancel()
				return orFallback(ctx, err, fallback)
			}
		},
	}
}

// Careful is careful Go code: each call's timeout of perCall is derived from
// the request's context, so the call ends when the request does. With a
// perCall larger than the request's patience, as per-call timeouts chosen for
// a dependency's worst case usually are, it is the request's deadline that
// ends a slow call.
func Careful(perCall time.Duration) Strategy {
	return Strategy{
		Name: "careful Go (request ctx, " + perCall.String() + " per call)",
		New: func(Scenario) Handler {
			return func(ctx context.Context, call, fallback func(context.Context) error) Answer {
				cctx, cancel := context.WithTimeout(ctx, perCall)
				err := call(cctx)
				cancel()
				return orFallback(ctx, err, fallback)
			}
		},
	}
}

// orFallback returns Full when the call succeeded, else answers from the
// fallback while the request still has time.
func orFallback(ctx context.Context, err error, fallback func(context.Context) error) Answer {
	if err == nil {
		return Full
	}
	if ctx.Err() == nil && fallback(ctx) == nil {
		return Fallback
	}
	return NoAnswer
}

// Lineup returns the strategies the comparison runs, in the order it reports
// them: the common bug and careful Go with 3 s per call, failsafe-go with
// [TunedFailsafe], and budget with [DefaultBudget].
func Lineup() []Strategy { return LineupPerCall(3 * time.Second) }

// LineupPerCall is [Lineup] with perCall as every strategy's per-call limit:
// the common bug's and careful code's timeout, the breaker's timeout policy
// and budget's Op.Cap.
func LineupPerCall(perCall time.Duration) []Strategy {
	fs, bud := TunedFailsafe, DefaultBudget
	fs.Timeout, bud.Cap = perCall, perCall
	return []Strategy{
		CommonBug(perCall),
		Careful(perCall),
		Failsafe(fs),
		Budget(bud),
	}
}
