package wire_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

// TestPolicyMaxIsACeiling is the regression test for a Max that clamped only what a
// client sent: a request that sent nothing, or sent only untrusted or skewed values,
// ran with no deadline at all under a policy whose Max was set.
func TestPolicyMaxIsACeiling(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    wire.Policy
		h    kv
	}{
		{"nothing sent", wire.Policy{Max: time.Second}, nil},
		{"only untrusted headers", wire.Policy{Max: time.Second, Trust: wire.SourcesNone}, kv{{wire.HeaderRequestTimeout, "3600000"}}},
		{"only malformed values", wire.Policy{Max: time.Second}, kv{{wire.HeaderRequestTimeout, "junk"}}},
		{"only a skewed absolute value", wire.Policy{Max: time.Second}, kv{{wire.HeaderRequestDeadline, unixMs(-time.Hour)}}},
		{"a huge value", wire.Policy{Max: time.Second}, kv{{wire.HeaderGRPCTimeout, "99999999H"}}},
		{"Default above Max", wire.Policy{Max: time.Second, Default: time.Hour}, nil},
	}
	for _, tt := range tests {
		for carrier, h := range carriers(tt.h) {
			t.Run(tt.name+"/"+carrier, func(t *testing.T) {
				t.Parallel()
				d, err := tt.p.Decide(h, now)
				if err != nil {
					t.Fatalf("Decide: %v", err)
				}
				if !d.HasDeadline || d.Remaining > tt.p.Max || d.Deadline.After(now.Add(tt.p.Max)) {
					t.Fatalf("Decide = %+v; want a deadline at most Max (%v) away", d, tt.p.Max)
				}
			})
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    *wire.Policy
		want string // a substring of the error; "" for valid
	}{
		{"nil is off, and valid", nil, ""},
		{"zero", &wire.Policy{}, ""},
		{"an edge", &wire.Policy{Max: 2 * time.Second, Default: time.Second, Min: 50 * time.Millisecond, AnswerMargin: 100 * time.Millisecond, Trust: wire.SourcesNone, Strict: true}, ""},
		{"Default above Max is clamped, not wrong", &wire.Policy{Max: time.Second, Default: time.Hour}, ""},
		{"Min alone", &wire.Policy{Min: time.Hour}, ""},
		{"negative Max", &wire.Policy{Max: -time.Second}, "Policy.Max is negative"},
		{"negative Default", &wire.Policy{Default: -1}, "Policy.Default is negative"},
		{"negative Min", &wire.Policy{Min: -1}, "Policy.Min is negative"},
		{"negative Reserve", &wire.Policy{AnswerMargin: -1}, "Policy.AnswerMargin is negative"},
		{"negative Skew", &wire.Policy{Skew: -1}, "Policy.Skew is negative"},
		{"unknown Trust bits", &wire.Policy{Trust: 1 << 12}, "Policy.Trust"},
		{"Reserve eats Max", &wire.Policy{Max: time.Second, AnswerMargin: time.Second}, "Policy.Max (1s)"},
		{"Min above Max", &wire.Policy{Max: time.Second, Min: 2 * time.Second}, "Policy.Max (1s)"},
		{"Min plus Reserve above Default", &wire.Policy{Default: time.Second, Min: 600 * time.Millisecond, AnswerMargin: 500 * time.Millisecond}, "Policy.Default (1s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.p.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v; want nil", err)
				}
				return
			}
			if !errors.Is(err, wire.ErrInvalidPolicy) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v; want an ErrInvalidPolicy saying %q", err, tt.want)
			}
		})
	}
}

// TestSwitchStoreRejectsInvalid is the regression test for negative settings that a
// Switch took without a word: Store now refuses them and keeps the running policy.
func TestSwitchStoreRejectsInvalid(t *testing.T) {
	t.Parallel()
	var s wire.Switch
	if err := s.Store(&wire.Policy{Max: time.Second}); err != nil {
		t.Fatalf("Store(valid) = %v", err)
	}
	err := s.Store(&wire.Policy{Max: -time.Second, Min: time.Millisecond})
	if !errors.Is(err, wire.ErrInvalidPolicy) || !strings.Contains(err.Error(), "Policy.Max") {
		t.Fatalf("Store(negative Max) = %v; want an ErrInvalidPolicy naming Policy.Max", err)
	}
	if p := s.Load(); p == nil || p.Max != time.Second || p.Min != 0 {
		t.Fatalf("after a rejected Store the policy is %+v; want the old one kept", p)
	}
	if err := s.Store(nil); err != nil || s.Load() != nil {
		t.Fatalf("Store(nil) = %v, policy %+v; want enforcement off", err, s.Load())
	}
}
