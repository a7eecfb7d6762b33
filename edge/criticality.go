package edge

import (
	"context"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// CriticalityValue returns the [wire.HeaderRequestCriticality] value to send
// for the class ctx carries ([budget.CriticalityFrom]), and false for the
// default class, which is not sent: a receiver that finds no header applies
// its own policy's class. It reads one context value and does not allocate.
// Clients send it whether or not ctx has a deadline.
func CriticalityValue(ctx context.Context) (string, bool) {
	c := budget.CriticalityFrom(ctx)
	if c == budget.DefaultCriticality {
		return "", false
	}
	return wire.FormatRequestCriticality(int8(c))
}
