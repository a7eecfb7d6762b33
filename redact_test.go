package budget_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

// TestLedgerJSONRedactsErrors: an expired call to a URL with an API key
// leaves the key out of the ledger's JSON.
func TestLedgerJSONRedactsErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	op := &budget.Op{Name: "pricing"}
	_ = op.Do(ctx, func(context.Context) error {
		return &url.Error{Op: "Get", URL: "http://user:pw@127.0.0.1:18777/x?api_key=SECRET123", Err: errors.New("connection refused")}
	})
	b, err := json.Marshal(budget.LedgerFrom(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "127.0.0.1:18777/x") {
		t.Fatalf("the ledger's JSON lost the error's URL: %s", b)
	}
	for _, secret := range []string{"SECRET123", "api_key", "user:pw"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the ledger's JSON shows %q: %s", secret, b)
		}
	}
}

func ExampleRedactError() {
	err := fmt.Errorf("pricing: %w", &url.Error{Op: "Get", URL: "https://user:pw@api.example/price?api_key=SECRET", Err: context.DeadlineExceeded})
	fmt.Println(budget.RedactError(err))
	// Output: pricing: Get "https://api.example/price": context deadline exceeded
}
