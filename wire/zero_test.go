package wire_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

// TestZeroValues runs every exported entry point of the package with zero values
// and nil arguments: none may panic, and each answers as its documentation says
// (nothing found, "not ok", enforcement off) or with an error naming what is missing.
func TestZeroValues(t *testing.T) {
	t.Parallel()
	var zero time.Time
	var nilPolicy *wire.Policy
	var nilSwitch *wire.Switch
	var nilParseError *wire.ParseError
	checks := []struct {
		name string
		ok   func() bool // reports whether the answer is the documented one
	}{
		{"AppendBudgetExpired", func() bool { return string(wire.AppendBudgetExpired(nil, "")) == "unknown" }},
		{"AppendConnectTimeout", func() bool { _, ok := wire.AppendConnectTimeout(nil, 0); return !ok }},
		{"AppendEnvoyUpstreamTimeout", func() bool { _, ok := wire.AppendEnvoyUpstreamTimeout(nil, 0); return !ok }},
		{"AppendGRPCTimeout", func() bool { _, ok := wire.AppendGRPCTimeout(nil, 0); return !ok }},
		{"AppendRequestDeadline", func() bool { _, ok := wire.AppendRequestDeadline(nil, zero); return !ok }},
		{"AppendRequestTimeout", func() bool { _, ok := wire.AppendRequestTimeout(nil, 0); return !ok }},
		{"FormatBudgetExpired", func() bool { return wire.FormatBudgetExpired("") == "unknown" }},
		{"FormatConnectTimeout", func() bool { _, ok := wire.FormatConnectTimeout(0); return !ok }},
		{"FormatEnvoyUpstreamTimeout", func() bool { _, ok := wire.FormatEnvoyUpstreamTimeout(0); return !ok }},
		{"FormatGRPCTimeout", func() bool { _, ok := wire.FormatGRPCTimeout(0); return !ok }},
		{"FormatRequestDeadline", func() bool { _, ok := wire.FormatRequestDeadline(zero); return !ok }},
		{"FormatRequestTimeout", func() bool { _, ok := wire.FormatRequestTimeout(0); return !ok }},
		{"ParseBudgetExpired", func() bool { _, ok, err := wire.ParseBudgetExpired(""); return !ok && err == nil }},
		{"ParseConnectTimeout", func() bool { _, ok, err := wire.ParseConnectTimeout(""); return !ok && err == nil }},
		{"ParseContextTTL", func() bool { _, ok, err := wire.ParseContextTTL(""); return !ok && err == nil }},
		{"ParseEnvoyExpectedTimeout", func() bool { _, ok, err := wire.ParseEnvoyExpectedTimeout(""); return !ok && err == nil }},
		{"ParseEnvoyUpstreamTimeout", func() bool { _, ok, err := wire.ParseEnvoyUpstreamTimeout(""); return !ok && err == nil }},
		{"ParseFinagleDeadline", func() bool { _, ok, err := wire.ParseFinagleDeadline(""); return !ok && err == nil }},
		{"ParseGRPCTimeout", func() bool { _, ok, err := wire.ParseGRPCTimeout(""); return !ok && err == nil }},
		{"ParseL5DDeadline", func() bool { _, ok, err := wire.ParseL5DDeadline(""); return !ok && err == nil }},
		{"ParseRequestAttempt", func() bool { _, ok, err := wire.ParseRequestAttempt(""); return !ok && err == nil }},
		{"ParseRequestDeadline", func() bool { _, ok, err := wire.ParseRequestDeadline(""); return !ok && err == nil }},
		{"AppendRequestMessageTimeout", func() bool { _, ok := wire.AppendRequestMessageTimeout(nil, 0); return !ok }},
		{"FormatRequestMessageTimeout", func() bool { _, ok := wire.FormatRequestMessageTimeout(0); return !ok }},
		{"ParseRequestMessageTimeout", func() bool { _, ok, err := wire.ParseRequestMessageTimeout(""); return !ok && err == nil }},
		{"ParseRequestTimeout", func() bool { _, ok, err := wire.ParseRequestTimeout(""); return !ok && err == nil }},
		{"ParseXRequestDeadline", func() bool { _, ok, err := wire.ParseXRequestDeadline(""); return !ok && err == nil }},
		{"Extract(nil)", func() bool { return wire.Extract(nil, 0, 0, zero) == wire.Extraction{} }},
		{"Extract(nil HTTPHeader)", func() bool { return wire.Extract(wire.HTTPHeader(nil), wire.SourcesAll, 0, zero) == wire.Extraction{} }},
		{"Extract(nil Metadata)", func() bool { return wire.Extract(wire.Metadata(nil), wire.SourcesAll, -1, zero) == wire.Extraction{} }},
		{"Extraction.Err", func() bool { return wire.Extraction{}.Err() == nil }},
		{"Decision.Refused", func() bool { return !wire.Decision{}.Refused() }},
		{"Decision.SourceName", func() bool { return wire.Decision{}.SourceName() == "none" }},
		{"HTTPHeader.Values", func() bool { return wire.HTTPHeader(nil).Values("") == nil }},
		{"Metadata.Values", func() bool { return wire.Metadata(nil).Values("") == nil }},
		{"ParseError.Error(nil)", func() bool { return nilParseError.Error() == wire.ErrMalformed.Error() }},
		{"ParseError.Error(zero)", func() bool { return (&wire.ParseError{}).Error() != "" }},
		{"ParseError.Unwrap", func() bool { return errors.Is(nilParseError.Unwrap(), wire.ErrMalformed) }},
		{"nil Policy.Decide", func() bool { d, err := nilPolicy.Decide(nil, zero); return d == wire.Decision{} && err == nil }},
		{"nil Policy.Validate", func() bool { return nilPolicy.Validate() == nil }},
		{"zero Policy.Decide", func() bool { d, err := (&wire.Policy{}).Decide(nil, zero); return !d.HasDeadline && err == nil }},
		{"zero Policy.Validate", func() bool { return (&wire.Policy{}).Validate() == nil }},
		{"Reason.String", func() bool { return wire.Reason(0).String() == "none" && wire.Reason(255).String() == "none" }},
		{"Sources.Has", func() bool { return wire.Sources(0).Has(0) }},
		{"Sources.Header", func() bool { return wire.Sources(0).Header() == "" && wire.Sources(0xffff).Header() == "" }},
		{"Sources.String", func() bool { _ = wire.Sources(0xffff).String(); return true }},
		{"zero Switch", func() bool {
			var s wire.Switch
			d, err := s.Decide(nil, zero)
			return s.Load() == nil && d == wire.Decision{} && err == nil && s.Store(nil) == nil
		}},
		{"nil Switch.Load", func() bool { return nilSwitch.Load() == nil }},
		{"nil Switch.Decide", func() bool {
			d, err := nilSwitch.Decide(wire.HTTPHeader(http.Header{}), zero)
			return d == wire.Decision{} && err == nil
		}},
		{"nil Switch.Store", func() bool { return nilSwitch.Store(&wire.Policy{}) != nil }},
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
