package grpcbudget_test

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
)

// A handler logs its error in full and returns what a caller outside the
// service may see.
func ExamplePublicError() {
	err := fmt.Errorf("query %q: %w", "SELECT * FROM secrets", budget.ErrInsufficient)
	st := status.Convert(grpcbudget.PublicError(context.Background(), err))
	fmt.Println(st.Code(), st.Message())
	st = status.Convert(grpcbudget.PublicError(context.Background(), errors.New("disk full at /var/db")))
	fmt.Println(st.Code(), st.Message())
	// Output:
	// DeadlineExceeded the request ran out of time
	// Internal internal server error
}
