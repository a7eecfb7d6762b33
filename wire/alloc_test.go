package wire_test

import (
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

// TestAllocs pins the allocation counts of the hot paths: parsing and appending never
// allocate, nor does Decide over either carrier, and a Format costs its one string.
// It does not call t.Parallel: AllocsPerRun counts the whole process's allocations.
func TestAllocs(t *testing.T) {
	h := wire.HTTPHeader(typicalHeader())
	md := wire.Metadata{"grpc-timeout": {"1500000u"}, "request-timeout-ms": {"1000, 900"}}
	junk := wire.Metadata{"request-timeout-ms": {"+5", "1e300"}, "grpc-timeout": {"5x"}}
	p := &wire.Policy{Max: 10 * time.Second, Default: 2 * time.Second, Min: 20 * time.Millisecond, AnswerMargin: 5 * time.Millisecond}
	shed := &wire.Policy{Min: time.Hour}
	var sw wire.Switch
	sw.Store(p)
	deadline := now.Add(1500 * time.Millisecond)
	buf := make([]byte, 0, 64)
	tests := []struct {
		name string
		want float64
		f    func()
	}{
		{"ParseRequestTimeout", 0, func() { _, _, _ = wire.ParseRequestTimeout("1520") }},
		{"ParseRequestMessageTimeout", 0, func() { _, _, _ = wire.ParseRequestMessageTimeout("250") }},
		{"AppendRequestMessageTimeout", 0, func() { _, _ = wire.AppendRequestMessageTimeout(buf[:0], 250*time.Millisecond) }},
		{"ParseGRPCTimeout", 0, func() { _, _, _ = wire.ParseGRPCTimeout("1520000u") }},
		{"ParseRequestDeadline", 0, func() { _, _, _ = wire.ParseRequestDeadline("1700000001500") }},
		{"ParseXRequestDeadline", 0, func() { _, _, _ = wire.ParseXRequestDeadline("1700000001500000") }},
		{"ParseFinagleDeadline", 0, func() { _, _, _ = wire.ParseFinagleDeadline("1700000000000000000 1700000001500000000") }},
		{"ParseBudgetExpired", 0, func() { _, _, _ = wire.ParseBudgetExpired("geometry") }},
		{"AppendRequestTimeout", 0, func() { _, _ = wire.AppendRequestTimeout(buf[:0], 1520*time.Millisecond) }},
		{"AppendRequestDeadline", 0, func() { _, _ = wire.AppendRequestDeadline(buf[:0], deadline) }},
		{"AppendGRPCTimeout", 0, func() { _, _ = wire.AppendGRPCTimeout(buf[:0], 1520*time.Millisecond) }},
		{"AppendBudgetExpired", 0, func() { _ = wire.AppendBudgetExpired(buf[:0], "geometry") }},
		{"AppendParseRequestTimeout", 0, func() {
			v, _ := wire.AppendRequestTimeout(buf[:0], 1520*time.Millisecond)
			_, _, _ = wire.ParseRequestTimeout(string(v))
		}},
		{"FormatRequestTimeout", 1, func() { _, _ = wire.FormatRequestTimeout(1520 * time.Millisecond) }},
		{"FormatBudgetExpired valid", 0, func() { _ = wire.FormatBudgetExpired("geometry") }},
		{"Extract HTTPHeader", 0, func() { _ = wire.Extract(h, wire.SourcesAll, 0, now) }},
		{"Decide HTTPHeader", 0, func() { _, _ = p.Decide(h, now) }},
		{"Decide Metadata", 0, func() { _, _ = p.Decide(md, now) }},
		{"Decide lenient malformed", 0, func() { _, _ = p.Decide(junk, now) }},
		{"Decide shed", 0, func() { _, _ = shed.Decide(h, now) }},
		{"Switch.Decide", 0, func() { _, _ = sw.Decide(h, now) }},
		{"Sources.String single", 0, func() { _ = wire.SourceGRPCTimeout.String() }},
	}
	for _, tt := range tests {
		if got := testing.AllocsPerRun(100, tt.f); got != tt.want {
			t.Errorf("%s: %v allocs per run; want %v", tt.name, got, tt.want)
		}
	}
}
