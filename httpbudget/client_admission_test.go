package httpbudget_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/httpbudget"
)

// The Transport runs each request as one attempt of the op edge.WithAdmission
// gives its stage: with the op's Limit taken, a request is refused before it
// is sent, marked not sent; an admitted request's answer is read whole after
// the attempt ended, and the attempt reaches the op's observer.
func TestTransportAdmitsByTheStagesOp(t *testing.T) {
	release := make(chan struct{})
	var arrived atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		if r.URL.Path == "/hang" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		_, _ = io.WriteString(w, "the whole answer")
	}))
	defer srv.Close()
	var mu sync.Mutex
	var attempts []budget.Event
	op := &budget.Op{Name: "pricing", Limit: 1, Observer: budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
		if ev.Kind == budget.EventAttempt {
			mu.Lock()
			attempts = append(attempts, ev)
			mu.Unlock()
		}
	})}
	client := &http.Client{Transport: httpbudget.NewTransport(nil,
		edge.WithClientStage("pricing"), edge.WithAdmission(edge.Ops{"pricing": op}.Op))}
	get := func(path string) (*http.Response, error) {
		ctx, cancel := budget.Start(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if rerr != nil || string(body) != "the whole answer" {
				t.Errorf("body %q, %v: the attempt's end cut it short", body, rerr)
			}
		}
		return resp, err
	}

	if _, err := get("/"); err != nil {
		t.Fatalf("an admitted request: %v", err)
	}
	hung := make(chan error, 1)
	go func() { _, err := get("/hang"); hung <- err }()
	for arrived.Load() < 2 {
		time.Sleep(time.Millisecond) // until the hanging request holds the op's one slot
	}
	_, err := get("/")
	var be *budget.Error
	if !errors.As(err, &be) || be.Outcome != budget.OutcomeShed {
		t.Fatalf("a request past the op's Limit: %v, want the op's shed refusal", err)
	}
	if s, ok := budget.SentOf(err); !ok || s != budget.NotSent {
		t.Errorf("the refused request is marked %v, %v; want NotSent", s, ok)
	}
	if n := arrived.Load(); n != 2 {
		t.Errorf("the server saw %d requests, want 2: the refused one must not be sent", n)
	}
	close(release)
	if err := <-hung; err != nil {
		t.Fatalf("the request that held the slot: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 2 || attempts[0].Outcome != budget.OutcomeOK || attempts[0].Stage != "pricing" {
		t.Fatalf("the op observed %d attempts (%+v), want the 2 admitted ones, completed", len(attempts), attempts)
	}
}

// A Transport's op with no Limit learns one from the server's shed
// answers (a refusal on arrival, which also reads as an expiry): once the
// server refused a request for its own Limit, the next request beyond the
// learned limit is refused at home, never sent. Before, the op read the
// shed answer as an expiry and learned nothing: every request went.
func TestTransportLearnsALimitFromShedAnswers(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	server := &budget.Op{Name: "server", Limit: 1}
	srv := httptest.NewServer(httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}), edge.WithAdmission(func(string) *budget.Op { return server })))
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	var sent atomic.Int64
	op := &budget.Op{Name: "backend"}
	client := &http.Client{Transport: httpbudget.NewTransport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent.Add(1)
		return base.RoundTrip(r)
	}), edge.WithClientStage("backend"), edge.WithAdmission(edge.Ops{"backend": op}.Op))}
	get := func() error {
		ctx, cancel := budget.Start(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	held := make(chan error, 1)
	go func() { held <- get() }()
	<-entered // the server's one slot is taken
	if s, _ := budget.SentOf(get()); s != budget.ServerRefused {
		close(release)
		t.Fatalf("the second request: %v, want the server's shed answer", s)
	}
	before := sent.Load()
	err := get()
	if s, _ := budget.SentOf(err); !errors.Is(err, budget.ErrInsufficient) || s != budget.NotSent {
		t.Errorf("the request after the shed answer: %v (%v), want refused at home, not sent", err, s)
	}
	if n := sent.Load() - before; n != 0 {
		t.Errorf("%d requests sent after the shed answer with one in flight, want 0", n)
	}
	close(release)
	if err := <-held; err != nil {
		t.Errorf("the held request: %v", err)
	}
}
