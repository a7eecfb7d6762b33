package connectbudget_test

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
)

// A handler logs its error in full and returns what a caller outside the
// service may see.
func ExamplePublicError() {
	err := fmt.Errorf("query %q: %w", "SELECT * FROM secrets", budget.ErrInsufficient)
	var ce *connect.Error
	errors.As(connectbudget.PublicError(context.Background(), err), &ce)
	fmt.Println(ce.Code(), ce.Message())
	// Output:
	// deadline_exceeded the request ran out of time
}
