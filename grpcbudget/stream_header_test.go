package grpcbudget

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// messageTimeoutCase is one case of the root module's
// edge/testdata/message-timeout.json: the table of Request-Message-Timeout-Ms
// decisions that edge's and connectbudget's tests run too.
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

type streamOf struct {
	grpc.ServerStream
	ctx context.Context
}

func (s streamOf) Context() context.Context { return s.ctx }

// TestMessageTimeoutDecisions: every case of the shared table, sent in gRPC
// metadata, gets the decision edge.MessageBudget gives it, as it does over
// Connect (connectbudget's TestMessageTimeoutDecisions).
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
			s := newServer([]edge.ServerOption{edge.WithPolicy(p), edge.WithObserver(obs), WithMessageBudget(dur(t, tc.Own))})
			md := metadata.MD{}
			if tc.Values != nil {
				md[MessageTimeoutKey] = tc.Values
			}
			ctx := metadata.NewIncomingContext(context.Background(), md)
			_, sctx, _, err := s.streamLimits(streamOf{ctx: ctx}, ctx)
			if tc.Refused {
				var ce *codedError
				if !errors.As(err, &ce) || ce.code != codes.InvalidArgument || !errors.Is(err, wire.ErrMalformed) {
					t.Fatalf("err %v, want INVALID_ARGUMENT for a malformed value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got time.Duration
			if st := streamStateOf(sctx); st != nil {
				got = st.message
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
