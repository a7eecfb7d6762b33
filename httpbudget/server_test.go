package httpbudget_test

import (
	"context"
	"fmt"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// seen records what the handler saw.
type seen struct {
	ran       bool
	deadline  bool
	remaining time.Duration
	ledger    bool
}

func probeHandler(s *seen) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ran = true
		s.remaining, s.deadline = budget.Remaining(r.Context())
		s.ledger = budget.LedgerFrom(r.Context()) != nil
		_, _ = io.WriteString(w, "ok")
	})
}

func serve(h http.Handler, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandlerAppliesThePolicy(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	cases := []struct {
		name      string
		policy    *wire.Policy
		hdr       map[string]string
		status    int
		ran       bool
		deadline  bool
		remaining time.Duration // upper bound when deadline is set
	}{
		{"nothing sent, no default", &wire.Policy{}, nil, 200, true, false, 0},
		{"nothing sent, default", &wire.Policy{Default: 800 * ms}, nil, 200, true, true, 800 * ms},
		{"timeout sent", &wire.Policy{}, map[string]string{"Request-Timeout-Ms": "500"}, 200, true, true, 500 * ms},
		{"reserve kept back", &wire.Policy{AnswerMargin: 100 * ms}, map[string]string{"Request-Timeout-Ms": "500"}, 200, true, true, 400 * ms},
		{"clamped to max", &wire.Policy{Max: 200 * ms}, map[string]string{"Request-Timeout-Ms": "90000"}, 200, true, true, 200 * ms},
		{"strictest wins", &wire.Policy{}, map[string]string{"Request-Timeout-Ms": "900", "Grpc-Timeout": "300m", "Connect-Timeout-Ms": "600"}, 200, true, true, 300 * ms},
		{"edge trusts nobody", &wire.Policy{Trust: wire.SourcesNone, Default: time.Second}, map[string]string{"Request-Timeout-Ms": "5"}, 200, true, true, time.Second},
		{"shed below min", &wire.Policy{Min: 100 * ms}, map[string]string{"Request-Timeout-Ms": "50"}, 504, false, false, 0},
		{"expired on arrival", &wire.Policy{}, map[string]string{"Request-Timeout-Ms": "0"}, 504, false, false, 0},
		{"malformed, lenient", &wire.Policy{Default: time.Second}, map[string]string{"Request-Timeout-Ms": "-5"}, 200, true, true, time.Second},
		{"malformed, strict", &wire.Policy{Strict: true}, map[string]string{"Request-Timeout-Ms": "-5"}, 400, false, false, 0},
		{"enforcement off", nil, map[string]string{"Request-Timeout-Ms": "0"}, 200, true, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s seen
			h := httpbudget.NewHandler(probeHandler(&s), edge.WithPolicy(tc.policy), edge.WithStage("checkout"))
			rec := serve(h, tc.hdr)
			if rec.Code != tc.status || s.ran != tc.ran || s.deadline != tc.deadline {
				t.Fatalf("status %d ran %v deadline %v; want %d %v %v (body %q)", rec.Code, s.ran, s.deadline,
					tc.status, tc.ran, tc.deadline, rec.Body.String())
			}
			if tc.deadline {
				if s.remaining > tc.remaining || s.remaining < tc.remaining-50*ms {
					t.Fatalf("handler saw %v left, want just under %v", s.remaining, tc.remaining)
				}
				if !s.ledger {
					t.Fatal("the handler's context carries no ledger")
				}
			}
			switch tc.status {
			case 504:
				if got := rec.Header().Get("Budget-Expired"); got != "checkout" {
					t.Fatalf("Budget-Expired = %q, want the stage", got)
				}
				if !strings.Contains(rec.Body.String(), "budget: checkout refused on arrival") {
					t.Fatalf("body %q does not name the stage", rec.Body.String())
				}
			case 400:
				if !strings.Contains(rec.Body.String(), "Request-Timeout-Ms") {
					t.Fatalf("body %q does not name the header", rec.Body.String())
				}
			}
		})
	}
}

func TestHandlerPolicySwapsAtRunTime(t *testing.T) {
	t.Parallel()
	var sw wire.Switch
	sw.Store(&wire.Policy{Min: time.Second})
	var s seen
	h := httpbudget.NewHandler(probeHandler(&s), edge.WithSwitch(&sw))
	hdr := map[string]string{"Request-Timeout-Ms": "100"}
	if rec := serve(h, hdr); rec.Code != 504 {
		t.Fatalf("with Min 1s: %d", rec.Code)
	}
	sw.Store(nil) // the operator turns enforcement off
	if rec := serve(h, hdr); rec.Code != 200 || !s.ran || s.deadline {
		t.Fatalf("with enforcement off: %d ran=%v deadline=%v", rec.Code, s.ran, s.deadline)
	}
	sw.Store(&wire.Policy{Min: 10 * time.Millisecond}) // looser
	if rec := serve(h, hdr); rec.Code != 200 || !s.deadline {
		t.Fatalf("with Min 10ms: %d", rec.Code)
	}
}

func TestHandlerServerTimingAndObserver(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var kinds []string
	obs := budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
		mu.Lock()
		k := ev.Kind.String() + ":" + ev.Outcome.String()
		if ev.Kind == budget.EventMalformed && ev.Err != nil {
			k += ":" + ev.Err.Error()
		}
		kinds = append(kinds, k)
		mu.Unlock()
	})
	op := &budget.Op{Name: "db"}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = op.Do(r.Context(), func(context.Context) error { time.Sleep(2 * time.Millisecond); return nil })
		w.WriteHeader(http.StatusAccepted)
	})
	h := httpbudget.NewHandler(next, httpbudget.WithServerTiming(), edge.WithObserver(obs),
		edge.WithPolicy(&wire.Policy{Min: 50 * time.Millisecond}))
	rec := serve(h, map[string]string{"Request-Timeout-Ms": "1000"})
	if rec.Code != http.StatusAccepted {
		t.Fatalf("status %d", rec.Code)
	}
	st := rec.Header().Get("Server-Timing")
	if !strings.HasPrefix(st, "attempt-db;dur=") || !strings.Contains(st, "budget;dur=") {
		t.Fatalf("Server-Timing = %q", st)
	}
	serve(h, map[string]string{"Request-Timeout-Ms": "10"})                                      // shed
	serve(h, map[string]string{"Request-Timeout-Ms": "abc", "X-Request-Deadline": "1000000000"}) // malformed + skew
	mu.Lock()
	defer mu.Unlock()
	got := strings.Join(kinds, " ")
	for _, want := range []string{"arrival:", "attempt:ok", "refuse:shed", "malformed:none:httpbudget: malformed deadline header ignored: Request-Timeout-Ms", "skew:"} {
		if !strings.Contains(got, want) {
			t.Errorf("observer saw %q, missing %q", got, want)
		}
	}
}

func TestStatusOf(t *testing.T) {
	t.Parallel()
	cases := map[error]int{
		nil:                           200,
		context.DeadlineExceeded:      504,
		budget.ErrInsufficient:        504,
		wire.ErrShed:                  504,
		wire.ErrExpired:               504,
		&wire.ParseError{}:            400,
		io.ErrUnexpectedEOF:           500,
		httpbudget.ErrUpstreamExpired: 504,
		&budget.Error{Outcome: budget.OutcomeExpired}: 504,
	}
	for err, want := range cases {
		if got := httpbudget.StatusOf(context.Background(), err); got != want {
			t.Errorf("StatusOf(%v) = %d, want %d", err, got, want)
		}
	}
	// A cancellation after the deadline is the deadline's doing.
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if got := httpbudget.StatusOf(past, context.Canceled); got != 504 {
		t.Errorf("StatusOf(past deadline, Canceled) = %d, want 504", got)
	}
	if got := httpbudget.StatusOf(context.Background(), context.Canceled); got != 500 {
		t.Errorf("StatusOf(no deadline, Canceled) = %d, want 500", got)
	}
}

func TestHandlerAnswersConnectRequestsWithAConnectError(t *testing.T) {
	t.Parallel()
	h := httpbudget.NewHandler(http.NotFoundHandler(), edge.WithPolicy(&wire.Policy{Min: time.Second}),
		edge.WithStage("pricing"))
	req := httptest.NewRequest(http.MethodPost, "/pkg.Svc/Method", strings.NewReader("{}"))
	req.Header.Set("Connect-Protocol-Version", "1")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Timeout-Ms", "10")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	want := `{"code":"deadline_exceeded","message":"budget: pricing refused on arrival: too little time left"}`
	if rec.Code != 504 || rec.Body.String() != want || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
}

func TestNewHandlerSetupMistakes(t *testing.T) {
	t.Parallel()
	var s seen
	h := httpbudget.NewHandler(probeHandler(&s), nil, edge.WithStage("x"), nil)
	if rec := serve(h, map[string]string{"Request-Timeout-Ms": "100"}); rec.Code != 200 || !s.deadline {
		t.Fatalf("nil options must be ignored: %d", rec.Code)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "nil handler") {
			t.Fatalf("NewHandler(nil) recovered %v, want a panic naming the nil handler", r)
		}
	}()
	httpbudget.NewHandler(nil)
}
