package httpbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// TestHandlerMaxIsACeiling is the regression test for a Max that did not bound
// requests sending no header, or only headers the policy does not trust: their
// handler ran with no deadline at all.
func TestHandlerMaxIsACeiling(t *testing.T) {
	t.Parallel()
	const max = time.Second
	cases := []struct {
		name   string
		policy wire.Policy
		hdr    map[string]string
	}{
		{"nothing sent", wire.Policy{Max: max}, nil},
		{"an hour, untrusted", wire.Policy{Max: max, Trust: wire.SourcesNone}, map[string]string{"Request-Timeout-Ms": "3600000"}},
		{"an hour, trusted", wire.Policy{Max: max}, map[string]string{"Request-Timeout-Ms": "3600000"}},
		{"a skewed absolute value", wire.Policy{Max: max}, map[string]string{"Request-Deadline": "1"}},
		{"a malformed value", wire.Policy{Max: max}, map[string]string{"Request-Timeout-Ms": "soon"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s seen
			rec := serve(httpbudget.NewHandler(probeHandler(&s), edge.WithPolicy(&tc.policy)), tc.hdr)
			if rec.Code != http.StatusOK || !s.ran {
				t.Fatalf("status %d, ran %v; want 200 and the handler run", rec.Code, s.ran)
			}
			if !s.deadline || s.remaining > max {
				t.Fatalf("handler saw deadline %v, remaining %v; want at most Max (%v)", s.deadline, s.remaining, max)
			}
		})
	}
}

// TestNewHandlerPanicsOnAnInvalidPolicy: a configuration mistake is reported at
// setup, naming the field, instead of being ignored on every request.
func TestNewHandlerPanicsOnAnInvalidPolicy(t *testing.T) {
	t.Parallel()
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, budget.ErrMisconfigured) || !errors.Is(err, wire.ErrInvalidPolicy) ||
			!strings.Contains(err.Error(), "Policy.Min") {
			t.Fatalf("panic value %v; want an error matching ErrMisconfigured and ErrInvalidPolicy naming Policy.Min", err)
		}
	}()
	httpbudget.NewHandler(http.NotFoundHandler(), edge.WithPolicy(&wire.Policy{Min: -time.Second}))
	t.Fatal("NewHandler accepted a negative Min")
}

// TestZeroTransportWorks is the regression test for the zero Transport, which
// panicked with a nil dereference when used as an http.Client's Transport.
func TestZeroTransportWorks(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	client := &http.Client{Transport: &httpbudget.Transport{}}
	defer client.CloseIdleConnections()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), ctx} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		h := <-got
		_, withDeadline := ctx.Deadline()
		if sent := h.Get(wire.HeaderRequestTimeout) != "" && h.Get(wire.HeaderRequestDeadline) != ""; sent != withDeadline {
			t.Fatalf("deadline %v: headers sent %v (%v)", withDeadline, sent, h)
		}
	}

	// The documented minimum useful time holds for the zero value too.
	spent, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(500*time.Microsecond))
	defer cancel2()
	req, _ := http.NewRequestWithContext(spent, http.MethodGet, srv.URL, nil)
	if _, err := client.Do(req); err == nil {
		t.Fatal("a request with less than a millisecond left was sent")
	}
}

func TestTransportNilIsMisconfigured(t *testing.T) {
	t.Parallel()
	var nilT *httpbudget.Transport
	req := httptest.NewRequest(http.MethodGet, "http://svc.test/", strings.NewReader("body"))
	for name, call := range map[string]func() error{
		"nil Transport": func() error { _, err := nilT.RoundTrip(req); return err },
		"nil request":   func() error { _, err := (&httpbudget.Transport{}).RoundTrip(nil); return err },
	} {
		if err := call(); !errors.Is(err, budget.ErrMisconfigured) {
			t.Errorf("%s: err = %v; want ErrMisconfigured", name, err)
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	t.Parallel()
	if err := (httpbudget.Limits{}).Validate(); err != nil {
		t.Fatalf("zero Limits: %v", err)
	}
	err := httpbudget.Limits{Dial: time.Second, ResponseHeader: -time.Second}.Validate()
	if !errors.Is(err, budget.ErrMisconfigured) || !strings.Contains(err.Error(), "Limits.ResponseHeader") {
		t.Fatalf("Validate = %v; want ErrMisconfigured naming Limits.ResponseHeader", err)
	}
}
