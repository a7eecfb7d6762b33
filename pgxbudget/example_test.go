package pgxbudget_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/pgxbudget"
)

// A statement run under a 300 ms budget: the server stops it a reserve
// before the deadline, the connection stays in the pool, and the error is an
// expiry naming the stage.
func Example() {
	cfg, err := pgxpool.ParseConfig(os.Getenv("BUDGET_TEST_POSTGRES"))
	if err != nil {
		fmt.Println(err)
		return
	}
	db, err := pgxbudget.New(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	ctx, cancel := budget.Start(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = db.Exec(ctx, "SELECT pg_sleep(5)")
	var be *budget.Error
	if errors.Is(err, context.DeadlineExceeded) && errors.As(err, &be) {
		fmt.Println("expired at stage", be.Stage)
	}
}

// An Op around statements learns from the server's timeouts; with plain pgx
// the Expired hook recognizes them.
func ExampleIsTimeout() {
	orders := &budget.Op{Name: "orders", Expired: pgxbudget.IsTimeout}
	_ = orders
}
