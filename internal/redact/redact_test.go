package redact_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/internal/redact"
)

// TestString: URLs lose their user info, query string and fragment wherever
// they appear in a text; the rest of the text is kept.
func TestString(t *testing.T) {
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
		if got := redact.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestError: the URL of a *url.Error anywhere in a chain is redacted,
// relative or not, wrapped once or joined.
func TestError(t *testing.T) {
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
			got := redact.Error(tc.err)
			if got != tc.want {
				t.Errorf("Error = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "SECRET123") {
				t.Errorf("Error kept the secret: %q", got)
			}
		})
	}
}
