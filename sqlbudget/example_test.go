package sqlbudget_test

import (
	"context"
	"database/sql"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/sqlbudget"
)

// A MariaDB statement under a 100 ms budget is sent as
// SET STATEMENT max_statement_time=0.080 FOR UPDATE …, so the server stops
// it on its own.
func Example() {
	var raw *sql.DB // from sql.Open("mysql", dsn) with any MySQL driver
	db := sqlbudget.New(raw, sqlbudget.MariaDB)

	ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, _ = db.ExecContext(ctx, "UPDATE stock SET n = n - 1 WHERE sku = ?", "A-1")
}
