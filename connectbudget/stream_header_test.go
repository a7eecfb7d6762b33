package connectbudget

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// messageTimeoutCase is one case of the root module's
// edge/testdata/message-timeout.json: the table of Request-Message-Timeout-Ms
// decisions that edge's and grpcbudget's tests run too.
type messageTimeoutCase struct {
	Name     string
	Off      bool
	Trust    string
	Strict   bool
	Max      string
	Own      string
	Values   []string
	Want     string
	Refused  bool
	Reported bool
}

func messageTimeoutCases(t *testing.T) []messageTimeoutCase {
	t.Helper()
	b, err := os.ReadFile("../edge/testdata/message-timeout.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []messageTimeoutCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

func dur(t *testing.T, s string) time.Duration {
	t.Helper()
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestMessageTimeoutDecisions: every case of the shared table, sent as an
// HTTP header, gets the decision edge.MessageBudget gives it, as it does in
// gRPC metadata (grpcbudget's TestMessageTimeoutDecisions). Before, a
// malformed value was ignored without a report even under a strict policy,
// a tenth was kept back of the client's value only, and Max capped nothing.
func TestMessageTimeoutDecisions(t *testing.T) {
	t.Parallel()
	for _, tc := range messageTimeoutCases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var malformed int
			obs := budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
				if ev.Kind == budget.EventMalformed && ev.Stage == edge.MessageTimeoutName {
					mu.Lock()
					malformed++
					mu.Unlock()
				}
			})
			var p *wire.Policy
			if !tc.Off {
				p = &wire.Policy{Strict: tc.Strict, Max: dur(t, tc.Max)}
				if tc.Trust == "none" {
					p.Trust = wire.SourcesNone
				}
			}
			s := NewServerInterceptor(edge.WithPolicy(p), edge.WithObserver(obs), WithMessageBudget(dur(t, tc.Own))).(*server)
			h := http.Header{}
			if tc.Values != nil {
				h[http.CanonicalHeaderKey(HeaderMessageTimeout)] = tc.Values
			}
			got, err := s.messageBudget(context.Background(), s.cfg.Policy.Load(), h)
			if tc.Refused {
				if connect.CodeOf(err) != connect.CodeInvalidArgument || !errors.Is(err, wire.ErrMalformed) {
					t.Fatalf("err %v, want InvalidArgument for a malformed value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := dur(t, tc.Want); got != want {
				t.Errorf("per-message budget %v, want %v", got, want)
			}
			if tc.Reported != (malformed == 1) || malformed > 1 {
				t.Errorf("%d malformed events, want reported=%v", malformed, tc.Reported)
			}
		})
	}
}
