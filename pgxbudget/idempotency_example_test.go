package pgxbudget_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/pgxbudget"
)

// A payment endpoint that runs at most once per Idempotency-Key across
// every replica sharing the database: the keys live in PostgreSQL, expired
// ones are purged hourly.
func ExampleNewIdempotencyStore() {
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

	store, err := pgxbudget.NewIdempotencyStore(db, pgxbudget.IdempotencyOptions{TTL: 24 * time.Hour})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := store.CreateTable(context.Background()); err != nil { // or run store.DDL() in a migration
		fmt.Println(err)
		return
	}
	go func() {
		for range time.Tick(time.Hour) {
			_, _ = store.Purge(context.Background())
		}
	}()

	pay := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated) // charge the card once
	})
	http.Handle("POST /charges", httpbudget.NewHandler(httpbudget.Idempotent(store, pay)))
}
