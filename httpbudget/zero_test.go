package httpbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
)

// TestZeroValues runs every exported entry point of the package with zero values
// and nil arguments. Nothing may panic except NewHandler(nil), which panics at
// setup as http.Handle does; everything else answers as documented or with an
// error naming what is missing.
func TestZeroValues(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	zeroOpts := []edge.ServerOption{nil, edge.WithPolicy(nil), edge.WithSwitch(nil),
		edge.WithStage(""), edge.WithObserver(nil), edge.WithLedgerCapacity(0), httpbudget.WithServerTiming()}
	zeroClient := []edge.ClientOption{nil, edge.WithTransit(0), edge.WithMinUseful(0),
		edge.WithClientStage(""), httpbudget.WithConnectTimeoutHeader(), httpbudget.WithEnvoyTimeoutHeader(),
		httpbudget.WithoutDeadlineHeader()}
	bare := func() *http.Request { return new(http.Request) } // no URL, no header, no context
	expired := func() *http.Request {
		ctx, cancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
		cancel()
		return new(http.Request).WithContext(ctx)
	}
	failing := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("no network here") })

	checks := []struct {
		name string
		ok   func() bool
	}{
		{"NewHandler with zero options, bare request", func() bool {
			rec := httptest.NewRecorder()
			httpbudget.NewHandler(ok, zeroOpts...).ServeHTTP(rec, bare())
			return rec.Code == http.StatusNoContent
		}},
		{"NewHandler with no options, header 0, empty stage", func() bool {
			rec := httptest.NewRecorder()
			r := bare()
			r.Header = http.Header{"Request-Timeout-Ms": {"0"}}
			httpbudget.NewHandler(ok, edge.WithStage("")).ServeHTTP(rec, r)
			return rec.Code == http.StatusGatewayTimeout && rec.Header().Get("Budget-Expired") == "unknown"
		}},
		{"StatusOf(nil)", func() bool { return httpbudget.StatusOf(context.Background(), nil) == http.StatusOK }},
		{"ErrUpstreamExpired", func() bool { return httpbudget.ErrUpstreamExpired != nil }},
		{"Limits.Validate", func() bool { return httpbudget.Limits{}.Validate() == nil }},
		{"NewBaseTransport(Limits{})", func() bool {
			tr := httpbudget.NewBaseTransport(httpbudget.Limits{})
			defer tr.CloseIdleConnections()
			return tr.ResponseHeaderTimeout > 0 && tr.TLSHandshakeTimeout > 0
		}},
		{"NewTransport(nil) with zero options", func() bool { return httpbudget.NewTransport(nil, zeroClient...) != nil }},
		{"zero Transport, bare request", func() bool {
			_, err := (&httpbudget.Transport{}).RoundTrip(bare())
			return err != nil // http.DefaultTransport's "nil Request.URL"
		}},
		{"zero Transport, expired request", func() bool {
			_, err := (&httpbudget.Transport{}).RoundTrip(expired())
			return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, budget.ErrInsufficient)
		}},
		{"Transport with zero options, a deadline and no URL", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := httpbudget.NewTransport(failing, zeroClient...).RoundTrip(bare().WithContext(ctx))
			return err != nil && strings.Contains(err.Error(), "no network")
		}},
		{"nil Transport", func() bool {
			var tr *httpbudget.Transport
			_, err := tr.RoundTrip(bare())
			return errors.Is(err, budget.ErrMisconfigured) && strings.Contains(err.Error(), "nil *Transport")
		}},
		{"nil request", func() bool {
			_, err := httpbudget.NewTransport(nil).RoundTrip(nil)
			return errors.Is(err, budget.ErrMisconfigured) && strings.Contains(err.Error(), "nil *http.Request")
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

// TestNewHandlerNilPanicsAtSetup: the one documented panic, as http.Handle's.
func TestNewHandlerNilPanicsAtSetup(t *testing.T) {
	t.Parallel()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "nil handler") {
			t.Fatalf("recover() = %v; want a panic naming the nil handler", r)
		}
	}()
	httpbudget.NewHandler(nil)
}
