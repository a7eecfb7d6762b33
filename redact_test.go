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

// TestRedact: URLs lose their user info, query string and fragment wherever
// they appear in a text; the rest of the text is kept.
func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"no url here", "no url here"},
		{`Get "http://127.0.0.1:18777/x?api_key=SECRET123": context deadline exceeded`,
			`Get "http://127.0.0.1:18777/x": context deadline exceeded`},
		{"dial https://user:pw@db.internal:5432/app#frag now", "dial https://db.internal:5432/app now"},
		{"two: http://a/x?k=1 and http://b/y?k=2.", "two: http://a/x and http://b/y"},
		{"plain http://svc/path stays", "plain http://svc/path stays"},
		{"<postgres://u:p@h/d?sslmode=disable>", "<postgres://h/d>"},
		{"broken http://u:p@h%zz/x?k=SECRET", "broken http://h%zz/x"},
		{"://?k=v", "://"},
	} {
		if got := budget.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRedactError: the URL of a *url.Error anywhere in a chain is redacted,
// relative or not, wrapped once or joined.
func TestRedactError(t *testing.T) {
	t.Parallel()
	ue := &url.Error{Op: "Get", URL: "http://127.0.0.1:18777/x?api_key=SECRET123", Err: context.DeadlineExceeded}
	rel := &url.Error{Op: "Post", URL: "/charge?token=SECRET123", Err: errors.New("EOF")}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"url.Error", ue, `Get "http://127.0.0.1:18777/x": context deadline exceeded`},
		{"wrapped", fmt.Errorf("pricing: %w", ue), `pricing: Get "http://127.0.0.1:18777/x": context deadline exceeded`},
		{"relative, joined", errors.Join(errors.New("a"), rel), "a\nPost \"/charge\": EOF"},
		{"budget.Error", &budget.Error{Stage: "pricing", Outcome: budget.OutcomeExpired, Err: ue},
			`budget: pricing did not complete in the time available: Get "http://127.0.0.1:18777/x": context deadline exceeded`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := budget.RedactError(tc.err)
			if got != tc.want {
				t.Errorf("RedactError = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "SECRET123") {
				t.Errorf("RedactError kept the secret: %q", got)
			}
		})
	}
}

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

func ExampleRedact() {
	fmt.Println(budget.Redact(`Get "http://127.0.0.1:18777/x?api_key=SECRET123": EOF`))
	// Output: Get "http://127.0.0.1:18777/x": EOF
}
