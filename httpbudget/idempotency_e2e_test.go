package httpbudget_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/idempotency"
)

// post sends a POST of body to url through client and returns the answer's
// body, or an error for a failure or a status other than 201.
func post(ctx context.Context, client *http.Client, url, body string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusCreated {
		err = budget.MarkSent(&statusError{resp.StatusCode}, budget.Executed)
	}
	return string(b), err
}

type statusError struct{ code int }

func (e *statusError) Error() string { return http.StatusText(e.code) }

// The payment case, end to end over loopback: each attempt gives up after
// 150 ms, the charge takes 300 ms. With a key, the retries reach the server
// while the first attempt still runs, wait for it or get its answer, and
// the charge runs once; the caller gets the first answer.
func TestRetryWithAKeyChargesOnce(t *testing.T) {
	t.Parallel()
	c := &charge{work: 300 * time.Millisecond}
	srv := httptest.NewServer(httpbudget.NewHandler(httpbudget.Idempotent(&idempotency.MemoryStore{}, c)))
	defer srv.Close()
	client := &http.Client{Transport: httpbudget.NewTransport(nil)}
	ctx, cancel := budget.Start(context.Background(), 10*time.Second)
	defer cancel()
	ctx = budget.WithIdempotencyKey(ctx)
	r := &budget.Retry{MaxAttempts: 8, Backoff: -1}
	answer, err := budget.RetryCall(ctx, r, &budget.Op{Name: "charge"}, func(ctx context.Context) (string, error) {
		actx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
		defer cancel()
		return post(actx, client, srv.URL, "5 EUR")
	})
	if c.runs.Load() != 1 {
		t.Fatalf("the charge ran %d times", c.runs.Load())
	}
	if err != nil || answer != "charged 5 EUR, run 1" {
		t.Fatalf("got %q, %v; want the first answer", answer, err)
	}
}

// Both copies of a hedged call carry the same key: the server runs the work
// once and the hedge gets the first copy's answer.
func TestHedgeWithAKeyChargesOnce(t *testing.T) {
	t.Parallel()
	c := &charge{work: 200 * time.Millisecond}
	srv := httptest.NewServer(httpbudget.NewHandler(httpbudget.Idempotent(&idempotency.MemoryStore{}, c)))
	defer srv.Close()
	client := &http.Client{Transport: httpbudget.NewTransport(nil)}
	ctx, cancel := budget.Start(context.Background(), 10*time.Second)
	defer cancel()
	ctx = budget.WithIdempotencyKey(ctx)
	h := &budget.Hedge{Delay: 20 * time.Millisecond}
	answer, err := budget.HedgeCall(ctx, h, &budget.Op{Name: "charge"}, func(ctx context.Context) (string, error) {
		return post(ctx, client, srv.URL, "5 EUR")
	})
	if err != nil || answer != "charged 5 EUR, run 1" || c.runs.Load() != 1 {
		t.Fatalf("got %q, %v after %d runs; want the first answer after 1", answer, err, c.runs.Load())
	}
}
