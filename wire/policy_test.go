package wire_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

func TestPolicyDecide(t *testing.T) {
	t.Parallel()
	rt, rd := wire.HeaderRequestTimeout, wire.HeaderRequestDeadline
	tests := []struct {
		name   string
		p      *wire.Policy
		h      kv
		want   wire.Decision // Deadline and CallerDeadline are checked from Remaining
		caller time.Duration // CallerDeadline - now, when HasDeadline
		err    error
	}{
		{name: "nil policy is off", p: nil, h: kv{{rt, "0"}, {rt, "junk"}}},
		{name: "zero policy, nothing sent", p: &wire.Policy{}},
		{
			name: "zero policy applies the client's value", p: &wire.Policy{}, h: kv{{rt, "1500"}},
			want:   wire.Decision{HasDeadline: true, Remaining: 1500 * time.Millisecond, Source: wire.SourceRequestTimeout},
			caller: 1500 * time.Millisecond,
		},
		{
			name: "zero policy refuses an expired request", p: &wire.Policy{}, h: kv{{rt, "0"}},
			want: wire.Decision{HasDeadline: true, Source: wire.SourceRequestTimeout, Reason: wire.ReasonExpired},
			err:  wire.ErrExpired,
		},
		{
			name: "zero policy is lenient", p: &wire.Policy{}, h: kv{{rt, "junk"}},
			want: wire.Decision{Malformed: 1, MalformedFrom: wire.SourceRequestTimeout},
		},
		{
			name: "zero policy does not trust Finagle", p: &wire.Policy{}, h: kv{{wire.HeaderFinagleDeadline, nanoPair(0, 0)}},
		},
		{
			name: "Default when nothing is sent", p: &wire.Policy{Default: 3 * time.Second},
			want:   wire.Decision{HasDeadline: true, Remaining: 3 * time.Second, Defaulted: true},
			caller: 3 * time.Second,
		},
		{
			name: "Max clamps the client", p: &wire.Policy{Max: 2 * time.Second}, h: kv{{rt, "60000"}},
			want:   wire.Decision{HasDeadline: true, Remaining: 2 * time.Second, Source: wire.SourceRequestTimeout, Clamped: true},
			caller: 2 * time.Second,
		},
		{
			name: "Max clamps Default", p: &wire.Policy{Max: time.Second, Default: 5 * time.Second},
			want:   wire.Decision{HasDeadline: true, Remaining: time.Second, Defaulted: true, Clamped: true},
			caller: time.Second,
		},
		{
			name: "Max leaves smaller values alone", p: &wire.Policy{Max: 2 * time.Second}, h: kv{{rt, "500"}},
			want:   wire.Decision{HasDeadline: true, Remaining: 500 * time.Millisecond, Source: wire.SourceRequestTimeout},
			caller: 500 * time.Millisecond,
		},
		{
			name: "Min sheds", p: &wire.Policy{Min: 100 * time.Millisecond}, h: kv{{rt, "99"}},
			want:   wire.Decision{HasDeadline: true, Remaining: 99 * time.Millisecond, Source: wire.SourceRequestTimeout, Reason: wire.ReasonShed},
			caller: 99 * time.Millisecond, err: wire.ErrShed,
		},
		{
			name: "Min admits at the minimum", p: &wire.Policy{Min: 100 * time.Millisecond}, h: kv{{rt, "100"}},
			want:   wire.Decision{HasDeadline: true, Remaining: 100 * time.Millisecond, Source: wire.SourceRequestTimeout},
			caller: 100 * time.Millisecond,
		},
		{
			name: "Min does not shed requests without a deadline", p: &wire.Policy{Min: time.Second},
		},
		{
			name: "Reserve is kept back", p: &wire.Policy{AnswerMargin: 50 * time.Millisecond}, h: kv{{rt, "1000"}},
			want:   wire.Decision{HasDeadline: true, Remaining: 950 * time.Millisecond, Source: wire.SourceRequestTimeout},
			caller: time.Second,
		},
		{
			name: "Reserve counts toward Min", p: &wire.Policy{AnswerMargin: 50 * time.Millisecond, Min: 100 * time.Millisecond}, h: kv{{rt, "140"}},
			want:   wire.Decision{HasDeadline: true, Remaining: 90 * time.Millisecond, Source: wire.SourceRequestTimeout, Reason: wire.ReasonShed},
			caller: 140 * time.Millisecond, err: wire.ErrShed,
		},
		{
			name: "Reserve eating everything sheds", p: &wire.Policy{AnswerMargin: 50 * time.Millisecond}, h: kv{{rt, "50"}},
			want:   wire.Decision{HasDeadline: true, Remaining: 0, Source: wire.SourceRequestTimeout, Reason: wire.ReasonShed},
			caller: 50 * time.Millisecond, err: wire.ErrShed,
		},
		{
			name: "Trust none: an edge starts fresh", p: &wire.Policy{Trust: wire.SourcesNone, Default: 2 * time.Second}, h: kv{{rt, "1"}, {rt, "junk"}},
			want:   wire.Decision{HasDeadline: true, Remaining: 2 * time.Second, Defaulted: true},
			caller: 2 * time.Second,
		},
		{
			name: "Trust a subset", p: &wire.Policy{Trust: wire.SourceGRPCTimeout}, h: kv{{rt, "1"}, {wire.HeaderGRPCTimeout, "3S"}},
			want:   wire.Decision{HasDeadline: true, Remaining: 3 * time.Second, Source: wire.SourceGRPCTimeout},
			caller: 3 * time.Second,
		},
		{
			name: "Trust Finagle explicitly", p: &wire.Policy{Trust: wire.SourcesAll}, h: kv{{wire.HeaderFinagleDeadline, nanoPair(0, time.Second)}},
			want:   wire.Decision{HasDeadline: true, Remaining: time.Second, Source: wire.SourceFinagleDeadline},
			caller: time.Second,
		},
		{
			name: "Strict rejects malformed", p: &wire.Policy{Strict: true}, h: kv{{rt, "1000"}, {wire.HeaderConnectTimeout, "-5"}},
			want:   wire.Decision{HasDeadline: true, Remaining: time.Second, Source: wire.SourceRequestTimeout, Reason: wire.ReasonMalformed, Malformed: 1, MalformedFrom: wire.SourceConnectTimeout},
			caller: time.Second, err: wire.ErrMalformed,
		},
		{
			name: "Strict wins over expiry", p: &wire.Policy{Strict: true}, h: kv{{rt, "0"}, {rt, "x"}},
			want: wire.Decision{HasDeadline: true, Source: wire.SourceRequestTimeout, Reason: wire.ReasonMalformed, Malformed: 1, MalformedFrom: wire.SourceRequestTimeout},
			err:  wire.ErrMalformed,
		},
		{
			name: "Strict ignores untrusted garbage", p: &wire.Policy{Strict: true, Trust: wire.SourcesOurs}, h: kv{{wire.HeaderGRPCTimeout, "junk"}},
		},
		{
			name: "skewed absolute alone: Default, not expiry", p: &wire.Policy{Default: time.Second}, h: kv{{rd, unixMs(-time.Minute)}},
			want:   wire.Decision{HasDeadline: true, Remaining: time.Second, Defaulted: true, Skew: true},
			caller: time.Second,
		},
		{
			name: "skewed absolute alone, no Default: no deadline", p: &wire.Policy{}, h: kv{{rd, unixMs(-time.Minute)}},
			want: wire.Decision{Skew: true},
		},
		{
			name: "absolute alone just passed: expired", p: &wire.Policy{}, h: kv{{rd, unixMs(-10 * time.Millisecond)}},
			want:   wire.Decision{HasDeadline: true, Remaining: -10 * time.Millisecond, Source: wire.SourceRequestDeadline, Reason: wire.ReasonExpired},
			caller: -10 * time.Millisecond, err: wire.ErrExpired,
		},
		{
			name: "custom Skew", p: &wire.Policy{Skew: time.Minute}, h: kv{{rd, unixMs(-30 * time.Second)}},
			want:   wire.Decision{HasDeadline: true, Remaining: -30 * time.Second, Source: wire.SourceRequestDeadline, Reason: wire.ReasonExpired},
			caller: -30 * time.Second, err: wire.ErrExpired,
		},
		{
			name: "negative settings are ignored", p: &wire.Policy{Max: -1, Default: -1, Min: -1, AnswerMargin: -1, Skew: -1}, h: kv{{rt, "10"}},
			want:   wire.Decision{HasDeadline: true, Remaining: 10 * time.Millisecond, Source: wire.SourceRequestTimeout},
			caller: 10 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		for carrier, h := range carriers(tt.h) {
			t.Run(tt.name+"/"+carrier, func(t *testing.T) {
				t.Parallel()
				got, err := tt.p.Decide(h, now)
				want := tt.want
				if want.HasDeadline {
					want.Deadline = now.Add(want.Remaining)
					want.CallerDeadline = now.Add(tt.caller)
				}
				if got != want {
					t.Fatalf("Decide =\n %+v\nwant\n %+v", got, want)
				}
				if (err != nil) != got.Refused() || !errors.Is(err, tt.err) {
					t.Fatalf("err = %v; want %v (Refused %v)", err, tt.err, got.Refused())
				}
			})
		}
	}
}

func TestDecideErrors(t *testing.T) {
	t.Parallel()
	p := &wire.Policy{Min: time.Second}
	_, err := p.Decide(wire.Metadata{"request-timeout-ms": {"0"}}, now)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, wire.ErrExpired) || errors.Is(err, wire.ErrShed) {
		t.Fatalf("expired: %v must match context.DeadlineExceeded and ErrExpired only", err)
	}
	_, err = p.Decide(wire.Metadata{"request-timeout-ms": {"5"}}, now)
	if !errors.Is(err, wire.ErrShed) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shed: %v must match ErrShed, not context.DeadlineExceeded", err)
	}
	p = &wire.Policy{Strict: true}
	_, err = p.Decide(wire.Metadata{"grpc-timeout": {"10x"}}, now)
	var pe *wire.ParseError
	if !errors.As(err, &pe) || pe.Header != wire.HeaderGRPCTimeout || pe.Reason != "unknown unit" {
		t.Fatalf("strict: %v must be a ParseError naming grpc-timeout", err)
	}
}

func TestDecisionLabels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d      wire.Decision
		source string
		reason string
	}{
		{wire.Decision{}, "none", "none"},
		{wire.Decision{HasDeadline: true, Defaulted: true}, "default", "none"},
		{wire.Decision{HasDeadline: true, Source: wire.SourceGRPCTimeout, Reason: wire.ReasonShed}, "grpc-timeout", "shed"},
		{wire.Decision{Reason: wire.ReasonExpired}, "none", "expired"},
		{wire.Decision{Reason: wire.ReasonMalformed}, "none", "malformed"},
	}
	for _, tt := range tests {
		if got := tt.d.SourceName(); got != tt.source {
			t.Errorf("SourceName() = %q; want %q", got, tt.source)
		}
		if got := tt.d.Reason.String(); got != tt.reason {
			t.Errorf("Reason.String() = %q; want %q", got, tt.reason)
		}
	}
}

// TestDecideTypicalHTTP runs a realistic inbound request through a realistic policy.
func TestDecideTypicalHTTP(t *testing.T) {
	t.Parallel()
	h := typicalHeader()
	p := &wire.Policy{Max: 10 * time.Second, Default: 2 * time.Second, Min: 20 * time.Millisecond, AnswerMargin: 5 * time.Millisecond}
	d, err := p.Decide(wire.HTTPHeader(h), now)
	if err != nil || d.Source != wire.SourceRequestDeadline || d.Remaining != 1495*time.Millisecond {
		t.Fatalf("Decide = %+v, %v", d, err)
	}
}

// typicalHeader is what a service behind a proxy receives from a caller using this
// library: a dozen ordinary headers and both budget headers, 20 ms of transit apart.
func typicalHeader() http.Header {
	h := http.Header{}
	h.Set("Accept", "application/json")
	h.Set("Accept-Encoding", "gzip")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", "512")
	h.Set("User-Agent", "Go-http-client/1.1")
	h.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.Set("X-Request-Id", "9f1c1f34-7a8c-4e0b-9b8e-2a3c4d5e6f70")
	h.Set("X-Forwarded-For", "10.0.0.1")
	h.Set("X-Forwarded-Proto", "https")
	h.Set("Authorization", "Bearer abc.def.ghi")
	h.Set(wire.HeaderRequestTimeout, "1520")
	h.Set(wire.HeaderRequestDeadline, unixMs(1500*time.Millisecond))
	return h
}

// TestPolicyTrusts: a zero Trust means SourcesDefault, SourcesNone trusts
// nothing, and a nil policy trusts nothing.
func TestPolicyTrusts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    *wire.Policy
		s    wire.Sources
		want bool
	}{
		{&wire.Policy{}, wire.SourceRequestCriticality, true},
		{&wire.Policy{}, wire.SourceL5DDeadline, false},
		{&wire.Policy{Trust: wire.SourcesNone}, wire.SourceRequestTimeout, false},
		{&wire.Policy{Trust: wire.SourcesOurs}, wire.SourceRequestDeadline, true},
		{&wire.Policy{Trust: wire.SourcesOurs}, wire.SourcesOurs | wire.SourceGRPCTimeout, false},
		{nil, wire.SourceRequestTimeout, false},
	} {
		if got := tc.p.Trusts(tc.s); got != tc.want {
			t.Errorf("%+v.Trusts(%v) = %v, want %v", tc.p, tc.s, got, tc.want)
		}
	}
}
