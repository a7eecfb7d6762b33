package budget_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// spendSome runs a small request: one attempt that takes 120ms, one that is
// refused, a noted backoff. It returns the request's context.
func spendSome(t *testing.T, cfg budget.Config) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := cfg.Start(context.Background(), 300*time.Millisecond)
	geo := &budget.Op{Name: "geometry", Prior: time.Second, ProbeEvery: -1}
	resolve := &budget.Op{Name: "resolve"}
	_ = resolve.Do(ctx, func(context.Context) error { time.Sleep(120 * time.Millisecond); return nil })
	_ = geo.Do(ctx, func(context.Context) error { return nil })
	budget.Note(ctx, budget.Event{Kind: budget.EventBackoff, Stage: "resolve", Duration: 30 * time.Millisecond, Remaining: 180 * time.Millisecond})
	return ctx, cancel
}

func TestLedgerRendersTextJSONAndServerTiming(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := spendSome(t, budget.Config{})
		defer cancel()
		l := budget.LedgerFrom(ctx)

		text := l.String()
		for _, want := range []string{"budget 300.0ms", "attempt", "resolve", "120.0ms", "refuse", "geometry", "insufficient", "|████████████"} {
			if !strings.Contains(text, want) {
				t.Errorf("text waterfall lacks %q:\n%s", want, text)
			}
		}

		raw, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			BudgetMs float64 `json:"budget_ms"`
			Events   []struct {
				Kind        string  `json:"kind"`
				Stage       string  `json:"stage"`
				OffsetMs    float64 `json:"offset_ms"`
				DurationMs  float64 `json:"duration_ms"`
				RemainingMs float64 `json:"remaining_ms"`
				Outcome     string  `json:"outcome"`
			} `json:"events"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.BudgetMs != 300 || len(doc.Events) != 4 {
			t.Fatalf("json = %s", raw)
		}
		if e := doc.Events[1]; e.Kind != "attempt" || e.DurationMs != 120 || e.Outcome != "ok" {
			t.Fatalf("attempt in json = %+v", e)
		}
		if e := doc.Events[2]; e.Kind != "refuse" || e.OffsetMs != 120 || e.RemainingMs != 180 {
			t.Fatalf("refusal in json = %+v", e)
		}

		st := l.ServerTiming()
		want := `attempt-resolve;dur=120.0;desc="ok", backoff-resolve;dur=30.0, budget;dur=300.0`
		if st != want {
			t.Fatalf("Server-Timing = %q, want %q", st, want)
		}
	})
}

func TestLedgerIsBounded(t *testing.T) {
	t.Parallel()
	ctx, cancel := budget.Config{LedgerCapacity: 4}.Start(context.Background(), time.Second)
	defer cancel()
	for range 100 {
		budget.Note(ctx, budget.Event{Kind: budget.EventRefuse, Stage: "loop"})
	}
	l := budget.LedgerFrom(ctx)
	if n := len(l.Events()); n != 4 {
		t.Fatalf("kept %d events, want the capacity 4", n)
	}
	if d := l.Dropped(); d != 97 {
		t.Fatalf("Dropped = %d, want 97 (arrival + 100 notes - 4)", d)
	}
	if !strings.Contains(l.String(), "97 more events not kept") {
		t.Fatalf("text does not say events were dropped:\n%s", l)
	}
	noLedger, cancel2 := budget.Config{LedgerCapacity: -1}.Start(context.Background(), time.Second)
	defer cancel2()
	if budget.LedgerFrom(noLedger) != nil {
		t.Fatal("a negative capacity must disable the ledger")
	}
	var nilLedger *budget.Ledger
	if nilLedger.String() != "" || nilLedger.ServerTiming() != "" || nilLedger.Events() != nil {
		t.Fatal("a nil ledger renders as empty")
	}
}

func TestNestedStartSharesTheLedger(t *testing.T) {
	t.Parallel()
	outer, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	inner, cancel2 := budget.Config{Stage: "handler"}.Start(outer, 5*time.Second)
	defer cancel2()
	if budget.LedgerFrom(inner) != budget.LedgerFrom(outer) {
		t.Fatal("a nested budget must record into the request's ledger")
	}
	evs := budget.LedgerFrom(outer).Events()
	if len(evs) != 2 || evs[1].Stage != "handler" || evs[1].Kind != budget.EventArrival {
		t.Fatalf("events = %+v", evs)
	}
}

func TestSlogObserver(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
		ctx, cancel := spendSome(t, budget.Config{Observer: budget.SlogObserver(logger)})
		defer cancel()
		_ = ctx
		out := buf.String()
		if !strings.Contains(out, "level=WARN msg=\"budget refuse\" kind=refuse stage=geometry") ||
			!strings.Contains(out, "needed=1s") || strings.Contains(out, "kind=attempt") {
			t.Fatalf("slog output:\n%s", out)
		}
	})
}

func TestErrorKinds(t *testing.T) {
	t.Parallel()
	last := errors.New("503 from upstream")
	cases := []struct {
		err          *budget.Error
		insufficient bool
		deadline     bool
		msg          string
	}{
		{&budget.Error{Stage: "geometry", Outcome: budget.OutcomeInsufficient}, true, false, "budget: geometry not started: too little time left"},
		{&budget.Error{Stage: "edge", Outcome: budget.OutcomeShed}, true, false, "budget: edge refused on arrival: too little time left"},
		{&budget.Error{Stage: "db", Outcome: budget.OutcomeExpired, Err: context.DeadlineExceeded}, false, true, "budget: db did not complete in the time available"},
		{&budget.Error{Stage: "pricing", Outcome: budget.OutcomeRetrySuppressed, Err: last}, false, false, "budget: pricing not retried: retry quota spent: 503 from upstream"},
		{&budget.Error{Outcome: budget.OutcomeInsufficient, Err: last}, true, false, "budget: work not started: too little time left: 503 from upstream"},
	}
	for _, tc := range cases {
		if got := errors.Is(tc.err, budget.ErrInsufficient); got != tc.insufficient {
			t.Errorf("%v: Is(ErrInsufficient) = %v", tc.err, got)
		}
		if got := errors.Is(tc.err, context.DeadlineExceeded); got != tc.deadline {
			t.Errorf("%v: Is(DeadlineExceeded) = %v", tc.err, got)
		}
		if tc.err.Error() != tc.msg {
			t.Errorf("Error() = %q, want %q", tc.err.Error(), tc.msg)
		}
		if tc.err.Err == last && !errors.Is(tc.err, last) {
			t.Errorf("%v does not reach the last real error", tc.err)
		}
	}
	if budget.OutcomeExpired.String() != "expired" || budget.Outcome(99).String() != "outcome(99)" {
		t.Error("Outcome.String")
	}
	if budget.EventRefuse.String() != "refuse" || budget.EventKind(200).String() != "event(200)" {
		t.Error("EventKind.String")
	}
}

// Regression: an attempt that ran out of time was logged at Debug, so sixty
// database timeouts at level Warn logged nothing.
func TestSlogObserverWarnsOfExpiredAttempts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
		ctx, cancel := budget.Config{Observer: budget.SlogObserver(logger)}.Start(context.Background(), 50*time.Millisecond)
		defer cancel()
		_ = (&budget.Op{Name: "db"}).Do(ctx, hang)
		if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "kind=attempt stage=db") ||
			!strings.Contains(out, "outcome=expired") {
			t.Fatalf("slog output:\n%s", out)
		}
	})
}
