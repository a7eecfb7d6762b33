package budgettest_test

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/budgettest"
)

// TestZeroValues runs every exported entry point of the package with zero values
// and nil arguments: none may panic, and each answers as documented or with an
// error naming what is missing.
func TestZeroValues(t *testing.T) {
	t.Parallel()
	var nilCtx context.Context // careless, but documented to work
	var nilDep *budgettest.Dependency
	var nilProbe *budgettest.Probe
	checks := []struct {
		name string
		ok   func() bool
	}{
		{"Quantile(nil)", func() bool { return budgettest.Quantile(nil, 0.5) == 0 }},
		{"Quantile(NaN)", func() bool { return budgettest.Quantile([]time.Duration{ms}, math.NaN()) == ms }},
		{"Record.Orphaned", func() bool { return budgettest.Record{}.Orphaned() == 0 }},
		{"Record.PastDeadline", func() bool { _, ok := budgettest.Record{}.PastDeadline(); return !ok }},
		{"zero Dependency, nil ctx", func() bool {
			var d budgettest.Dependency
			return d.Call(nilCtx) == nil && d.Calls() == 1
		}},
		{"zero Dependency.ServeHTTP", func() bool {
			var d budgettest.Dependency
			rec := httptest.NewRecorder()
			d.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			return rec.Code == http.StatusOK
		}},
		{"nil Dependency", func() bool {
			err := nilDep.Call(context.Background())
			return err != nil && strings.Contains(err.Error(), "nil *Dependency") && nilDep.Calls() == 0
		}},
		{"nil Dependency.ServeHTTP", func() bool {
			rec := httptest.NewRecorder()
			nilDep.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			return rec.Code == http.StatusServiceUnavailable && strings.Contains(rec.Body.String(), "nil *Dependency")
		}},
		{"zero Probe, nil ctx, stopped twice", func() bool {
			var p budgettest.Probe
			stop := p.Track(nilCtx)
			first := stop()
			second := stop()
			return first == second && len(p.Records()) == 1 && p.Running() == 0 && p.Wait(nilCtx) == nil &&
				len(p.Orphaned()) == 0
		}},
		{"nil Probe", func() bool {
			rec := nilProbe.Track(context.Background())()
			return !rec.Stop.IsZero() && nilProbe.Records() == nil && nilProbe.Orphaned() == nil &&
				nilProbe.Running() == 0 && nilProbe.Wait(nilCtx) == nil
		}},
		{"Dependency with a nil Probe field", func() bool {
			d := budgettest.Dependency{Probe: nilProbe}
			return d.Call(context.Background()) == nil
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
