package budget_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

// TestZeroValues runs every exported entry point of the package with zero values
// and nil arguments: nil receivers, functions, loggers, observers and errors, and
// contexts that carry no budget. None may panic: each answers as documented, or with
// an error matching ErrMisconfigured that names what is missing. A nil
// context.Context is left out on purpose: this package speaks context's language,
// and context.WithDeadline and every other derivation panic on a nil parent, a rule
// Go callers know and staticcheck (SA1012) enforces.
func TestZeroValues(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	var (
		zero        time.Time
		nilOp       *budget.Op
		nilErr      *budget.Error
		nilLedger   *budget.Ledger
		nilEst      *budget.Estimator
		nilDist     *budget.Distribution
		nilQuota    *budget.RetryQuota
		nilDetacher *budget.Detacher
		nilRetry    *budget.Retry
		nilHedge    *budget.Hedge
		nilQueue    *budget.Queue[int]
		nilGather   *budget.Gather[int]
		nilLadder   *budget.Ladder[int]
	)
	misconfigured := func(err error) bool { return errors.Is(err, budget.ErrMisconfigured) }
	okFn := func(context.Context) error { return nil }
	okV := func(context.Context) (int, error) { return 1, nil }
	checks := []struct {
		name string
		ok   func() bool
	}{
		// Queries of a context that carries no budget.
		{"Remaining(bg)", func() bool { _, ok := budget.Remaining(bg); return !ok }},
		{"Available(bg)", func() bool { _, ok := budget.Available(bg); return !ok }},
		{"Reserve(bg)", func() bool { return budget.Reserve(bg) == 0 }},
		{"AttemptNumber(bg)", func() bool { return budget.AttemptNumber(bg) == 0 }},
		{"LedgerFrom(bg)", func() bool { return budget.LedgerFrom(bg) == nil }},
		{"Note(bg, zero)", func() bool { budget.Note(bg, budget.Event{}); return true }},
		{"Refuse(bg, zero values)", func() bool {
			return errors.Is(budget.Refuse(bg, "", zero, 0, 0), budget.ErrInsufficient)
		}},
		// Derivations from a context.
		{"Start(bg, 0)", func() bool { ctx, cancel := budget.Start(bg, 0); defer cancel(); return ctx.Err() != nil }},
		{"StartUntil(bg, zero)", func() bool { ctx, cancel := budget.StartUntil(bg, zero); defer cancel(); return ctx.Err() != nil }},
		{"Config{}.Start", func() bool { _, cancel := budget.Config{}.Start(bg, time.Second); cancel(); return true }},
		{"Config{}.StartUntil", func() bool { _, cancel := budget.Config{}.StartUntil(bg, zero); cancel(); return true }},
		{"AfterWait(bg, zero, 0)", func() bool { _, cancel := budget.AfterWait(bg, zero, 0); cancel(); return true }},
		{"Attempt(bg, \"\", 0, 0)", func() bool {
			_, cancel, _ := budget.Attempt(bg, "", 0, 0)
			if cancel != nil {
				cancel()
			}
			return true
		}},
		{"Detach(bg, \"\", 0)", func() bool { _, cancel := budget.Detach(bg, "", 0); cancel(); return true }},
		{"WithReserve(bg, 0)", func() bool { return budget.WithReserve(bg, 0) != nil }},
		{"WithFallback(bg, 0)", func() bool { return budget.WithFallback(bg, 0) == bg }},
		// Errors.
		{"Permanent(nil)", func() bool { return budget.Permanent(nil) == nil }},
		{"IsPermanent(nil)", func() bool { return !budget.IsPermanent(nil) }},
		{"RetryAfter(nil, 0)", func() bool { return budget.RetryAfter(nil, 0) == nil }},
		{"nil Error methods", func() bool {
			_ = nilErr.Error()
			_ = nilErr.Timeout()
			_ = nilErr.Is(nil)
			return nilErr.Unwrap() == nil
		}},
		{"zero Error methods", func() bool {
			e := &budget.Error{}
			return e.Error() != "" && !e.Is(nil) && e.Unwrap() == nil
		}},
		// Operations.
		{"nil Op.Do", func() bool { return misconfigured(nilOp.Do(bg, okFn)) }},
		{"nil Op.Admit", func() bool { _ = nilOp.Admit(bg); return true }},
		{"nil Op.AdmitAt", func() bool { _ = nilOp.AdmitAt(zero, budget.Ask{}); return true }},
		{"nil Op.SuggestedTimeout", func() bool { _ = nilOp.SuggestedTimeout(); return true }},
		{"nil Op.Reset", func() bool { nilOp.Reset(); return true }},
		{"zero Op", func() bool {
			o := &budget.Op{}
			_ = o.Admit(bg)
			_ = o.AdmitAt(zero, budget.Ask{})
			_ = o.SuggestedTimeout()
			o.Reset()
			return o.Do(bg, okFn) == nil
		}},
		{"Call(nil op)", func() bool { _, err := budget.Call(bg, nilOp, okV); return misconfigured(err) }},
		{"Call(nil fn)", func() bool { _, err := budget.Call[int](bg, &budget.Op{}, nil); return misconfigured(err) }},
		{"nil Retry.Do", func() bool {
			return misconfigured(nilRetry.Do(bg, nilOp, okFn)) || nilRetry.Do(bg, &budget.Op{}, okFn) == nil
		}},
		{"zero Retry.Do", func() bool { return (&budget.Retry{}).Do(bg, &budget.Op{}, okFn) == nil }},
		{"RetryCall(nil, nil, nil)", func() bool { _, err := budget.RetryCall[int](bg, nil, nil, nil); return misconfigured(err) }},
		{"nil Hedge.Do", func() bool { err := nilHedge.Do(bg, &budget.Op{}, okFn); return err == nil || misconfigured(err) }},
		{"zero Hedge.Do", func() bool { return (&budget.Hedge{}).Do(bg, &budget.Op{}, okFn) == nil }},
		{"HedgeCall(nil, nil, nil)", func() bool { _, err := budget.HedgeCall[int](bg, nil, nil, nil); return misconfigured(err) }},
		{"nil Ladder.Do", func() bool { _, _, err := nilLadder.Do(bg); return misconfigured(err) }},
		{"nil Ladder.Need", func() bool { return nilLadder.Need() == 0 }},
		{"zero Ladder.Need", func() bool {
			return (&budget.Ladder[int]{}).Need() == 0 && (&budget.Ladder[int]{Rungs: []budget.Rung[int]{{}}}).Need() == 0
		}},
		{"nil Gather.Do", func() bool { _, err := nilGather.Do(bg); return err == nil || misconfigured(err) }},
		{"zero Gather.Do", func() bool { _, err := (&budget.Gather[int]{}).Do(bg); return err == nil || misconfigured(err) }},
		{"zero Steps.Run", func() bool {
			_, err := budget.Steps{}.Run(bg, func(context.Context, int) (bool, error) { return true, nil })
			return err == nil
		}},
		{"Steps.Run(nil)", func() bool { _, err := budget.Steps{}.Run(bg, nil); return misconfigured(err) }},
		// Detached work.
		{"nil Detacher", func() bool {
			return misconfigured(nilDetacher.Go(bg, "", okFn)) && nilDetacher.Running() == 0 &&
				nilDetacher.Failed() == 0 && nilDetacher.Wait(bg) == nil
		}},
		{"zero Detacher, nil fn", func() bool {
			var d budget.Detacher
			return misconfigured(d.Go(bg, "", nil)) && d.Wait(bg) == nil
		}},
		// Queue.
		{"nil Queue", func() bool {
			_, _, err := nilQueue.Get(bg)
			return misconfigured(nilQueue.Put(bg, 1)) && misconfigured(err) && nilQueue.Stats().Len == 0 &&
				nilQueue.Stats() == budget.QueueStats{}
		}},
		{"zero Queue", func() bool {
			var q budget.Queue[int]
			ctx, cancel := budget.Start(bg, time.Minute)
			defer cancel()
			if q.Put(ctx, 1) != nil || q.Stats().Len != 1 {
				return false
			}
			v, _, err := q.Get(ctx)
			return v == 1 && err == nil
		}},
		// Measurements.
		{"nil Estimator", func() bool {
			nilEst.Record(0)
			nilEst.RecordAt(zero, 0)
			nilEst.RecordCensored(0)
			nilEst.RecordCensoredAt(zero, 0)
			nilEst.Reset()
			_ = nilEst.Distribution(zero)
			return true
		}},
		{"zero Estimator", func() bool {
			var e budget.Estimator
			e.Record(-time.Second)
			e.RecordAt(zero, time.Duration(math.MaxInt64))
			e.RecordCensored(0)
			e.RecordCensoredAt(zero, -1)
			d := e.Distribution(zero)
			e.Reset()
			return d != nil
		}},
		{"nil Distribution", func() bool {
			_, _ = nilDist.Quantile(math.NaN())
			return nilDist.Count() == 0 && nilDist.Censored() == 0 && nilDist.CDF(0) >= 0 && !nilDist.Known(time.Second) &&
				nilDist.Median() >= 0 && nilDist.P99() >= 0
		}},
		{"zero Distribution", func() bool {
			d := &budget.Distribution{}
			_, _ = d.Quantile(2)
			return d.Count() == 0 && d.CDF(-1) == 0 && d.Median() >= 0 && d.P99() >= 0
		}},
		{"nil RetryQuota", func() bool {
			nilQuota.Deposit(zero)
			return nilQuota.Withdraw(zero) && nilQuota.Balance(zero) >= 0 && nilQuota.Suppressed() == 0
		}},
		{"zero RetryQuota", func() bool {
			var q budget.RetryQuota
			q.Deposit(zero)
			_ = q.Withdraw(zero)
			_ = q.Balance(zero)
			return q.Suppressed() >= 0
		}},
		// Ledger and observation.
		{"nil Ledger", func() bool {
			j, err := nilLedger.MarshalJSON()
			return nilLedger.Budget() == 0 && nilLedger.Dropped() == 0 && nilLedger.Events() == nil &&
				nilLedger.ServerTiming() == "" && nilLedger.Start().IsZero() && nilLedger.String() != "x" &&
				err == nil && json.Valid(j)
		}},
		{"zero Ledger", func() bool {
			l := &budget.Ledger{}
			j, err := l.MarshalJSON()
			_ = l.String()
			return l.Events() == nil && err == nil && json.Valid(j)
		}},
		{"SlogObserver(nil)", func() bool {
			budget.SlogObserver(nil).Observe(bg, budget.Event{Kind: budget.EventRefuse, Err: nilErr})
			return true
		}},
		{"nil ObserverFunc", func() bool { var f budget.ObserverFunc; f.Observe(bg, budget.Event{}); return true }},
		{"EventKind and Outcome strings", func() bool {
			return budget.EventKind(0).String() != "" && budget.EventKind(255).String() != "" &&
				budget.Outcome(0).String() != "" && budget.Outcome(255).String() != ""
		}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panicked: %v", r)
				}
			}()
			if !c.ok() {
				t.Fatal("did not give the documented answer")
			}
		})
	}
}
