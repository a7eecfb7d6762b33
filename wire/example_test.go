package wire_test

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// A client writes both of this library's headers. The encoders round down and refuse to
// write a budget of zero, so a call with under a millisecond left is refused locally.
func Example_encode() {
	sent := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	deadline := sent.Add(1520*time.Millisecond + 700*time.Microsecond)

	h := http.Header{}
	if v, ok := wire.FormatRequestTimeout(deadline.Sub(sent)); ok {
		h.Set(wire.HeaderRequestTimeout, v)
	}
	if v, ok := wire.FormatRequestDeadline(deadline); ok {
		h.Set(wire.HeaderRequestDeadline, v)
	}
	fmt.Println(wire.HeaderRequestTimeout+":", h.Get(wire.HeaderRequestTimeout))
	fmt.Println(wire.HeaderRequestDeadline+":", h.Get(wire.HeaderRequestDeadline))

	grpc, _ := wire.FormatGRPCTimeout(deadline.Sub(sent))
	fmt.Println(wire.HeaderGRPCTimeout+":", grpc)

	_, ok := wire.FormatRequestTimeout(900 * time.Microsecond)
	fmt.Println("send with 0.9 ms left:", ok)
	// Output:
	// Request-Timeout-Ms: 1520
	// Request-Deadline: 1740830401520
	// grpc-timeout: 1520700u
	// send with 0.9 ms left: false
}

// Every parser gives one of three outcomes: absent, valid or malformed. A malformed
// value's error names the header and the problem, and matches ErrMalformed.
func Example_parse() {
	for _, v := range []string{"", "250", "+250", "\uff12\uff15\uff10"} {
		d, ok, err := wire.ParseRequestTimeout(v)
		switch {
		case err != nil:
			fmt.Printf("%q: malformed (%v; ErrMalformed: %v)\n", v, err, errors.Is(err, wire.ErrMalformed))
		case !ok:
			fmt.Printf("%q: absent\n", v)
		default:
			fmt.Printf("%q: %v left\n", v, d)
		}
	}
	d, _, _ := wire.ParseGRPCTimeout("1500m")
	fmt.Println("grpc-timeout 1500m:", d)
	// Output:
	// "": absent
	// "250": 250ms left
	// "+250": malformed (wire: malformed Request-Timeout-Ms "+250": not an ASCII digit; ErrMalformed: true)
	// "２５０": malformed (wire: malformed Request-Timeout-Ms "２５０": not an ASCII digit; ErrMalformed: true)
	// grpc-timeout 1500m: 1.5s
}

// A server decides each request's deadline on arrival. Here a caller sent 1.52 s as a
// relative value and a deadline 20 ms earlier on its wall clock: the clocks agree within
// the skew threshold, so the tighter absolute value wins and the 20 ms the request spent
// in transit are charged to its budget.
func ExamplePolicy_Decide() {
	arrived := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	r, _ := http.NewRequest("GET", "http://orders.internal/v1/orders/42", nil)
	r.Header.Set(wire.HeaderRequestTimeout, "1520")
	r.Header.Set(wire.HeaderRequestDeadline, "1740830401500")

	p := &wire.Policy{
		Max:          10 * time.Second,
		Default:      2 * time.Second,
		Min:          50 * time.Millisecond,
		AnswerMargin: 10 * time.Millisecond,
	}
	d, err := p.Decide(wire.HTTPHeader(r.Header), arrived)
	fmt.Println("refused:", err)
	fmt.Println("source:", d.SourceName())
	fmt.Println("caller waits until:", d.CallerDeadline.Format("15:04:05.000"))
	fmt.Println("handler has:", d.Remaining)

	// A caller with 30 ms left is shed before the handler runs.
	r.Header.Set(wire.HeaderRequestTimeout, "30")
	d, err = p.Decide(wire.HTTPHeader(r.Header), arrived)
	fmt.Println("refused:", err, "| reason:", d.Reason)
	// Output:
	// refused: <nil>
	// source: Request-Deadline
	// caller waits until: 12:00:01.500
	// handler has: 1.49s
	// refused: wire: request shed on arrival: too little time left | reason: shed
}

// A Switch holds the running policy; storing nil turns enforcement off without a
// restart.
func ExampleSwitch() {
	var s wire.Switch
	s.Store(&wire.Policy{Min: 100 * time.Millisecond})
	h := wire.Metadata{"grpc-timeout": {"20m"}}
	arrived := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

	_, err := s.Decide(h, arrived)
	fmt.Println("enforcing:", err)

	s.Store(nil) // the operator turns enforcement off
	d, err := s.Decide(h, arrived)
	fmt.Println("off:", err, d.HasDeadline)
	// Output:
	// enforcing: wire: request shed on arrival: too little time left
	// off: <nil> false
}

func ExampleParseRequestCriticality() {
	h := http.Header{}
	h.Set(wire.HeaderRequestCriticality, "Sheddable")
	c, ok, err := wire.ParseRequestCriticality(h.Get(wire.HeaderRequestCriticality))
	fmt.Println(c, ok, err)
	v, _ := wire.FormatRequestCriticality(budget.Critical)
	fmt.Println(v)
	// An edge does not trust it; a service behind one does.
	edge := &wire.Policy{Trust: wire.SourcesNone}
	d, _ := edge.Decide(wire.HTTPHeader(h), time.Now())
	fmt.Println(d.Criticality, d.CriticalityFromHeader)
	d, _ = (&wire.Policy{}).Decide(wire.HTTPHeader(h), time.Now())
	fmt.Println(d.Criticality, d.CriticalityFromHeader)
	// Output:
	// sheddable true <nil>
	// critical
	// default false
	// sheddable true
}

// A client reads Budget-No-Retry on a failed answer; any value asks for no
// retry, and "shed" says that nothing ran.
func ExampleParseBudgetNoRetry() {
	h := http.Header{}
	v, _ := wire.FormatBudgetNoRetry(wire.NoRetryShed)
	h.Set(wire.HeaderBudgetNoRetry, v)
	r, ok, err := wire.ParseBudgetNoRetry(h.Values(wire.HeaderBudgetNoRetry))
	fmt.Println(r, ok, err, r == wire.NoRetryShed)
	_, _, err = wire.ParseBudgetNoRetry([]string{"later"})
	fmt.Println(err)
	// Output:
	// shed true <nil> true
	// wire: malformed Budget-No-Retry "later": not "shed" or "retried"
}
