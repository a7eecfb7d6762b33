package grpcbudget_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/balancer"

	"github.com/timebudget/budget/grpcbudget"
)

// The balancer's config parser, given any bytes, returns a config or an
// error naming the balancer, and never panics.
func FuzzBalancerConfig(f *testing.F) {
	for _, s := range []string{``, `{}`, `null`, `{"probeEvery":50,"ejectFactor":3}`, `{"probeEvry":5}`,
		`{"probeEvery":1}`, `{"probeEvery":9223372036854775808}`, `{"probeEvery":1e3}`, `{"ejectFactor":1e400}`,
		`{"ejectFactor":-0}`, `{"probeEvery":50}{}`, `[1]`, `{"probeEvery":null}`, `"x"`, `{`} {
		f.Add([]byte(s))
	}
	p := balancer.Get(grpcbudget.BalancerName).(balancer.ConfigParser)
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, err := p.ParseConfig(raw)
		if err != nil {
			if !strings.Contains(err.Error(), grpcbudget.BalancerName) {
				t.Errorf("ParseConfig(%q): error %q does not name the balancer", raw, err)
			}
			return
		}
		if cfg == nil {
			t.Errorf("ParseConfig(%q) returned neither a config nor an error", raw)
		}
	})
}
