package wire_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/timebudget/budget/wire"
)

// A probe's mark is read only under a policy that trusts it.
func ExampleParseBudgetProbe() {
	fmt.Println(wire.ParseBudgetProbe("1"))
	h := http.Header{}
	h.Set(wire.HeaderBudgetProbe, wire.ProbeValue)
	d, _ := (&wire.Policy{}).Decide(wire.HTTPHeader(h), time.Now())
	fmt.Println(d.Probe)
	d, _ = (&wire.Policy{Trust: wire.SourcesNone}).Decide(wire.HTTPHeader(h), time.Now())
	fmt.Println(d.Probe)
	// Output:
	// true true <nil>
	// true
	// false
}
