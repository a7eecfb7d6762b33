package httpbudget_test

import (
	"fmt"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// TestCurlHostileHeaders sends hostile deadline headers from a real client,
// curl, over a real connection, and checks each gets its defined outcome: the
// server answers, never hangs or crashes, and a lenient policy ignores what it
// cannot parse while a strict one names it.
func TestCurlHostileHeaders(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is not installed; .ci/run must install it (apt-get install curl)")
		}
		t.Skip("curl not installed (apt-get install curl); CI runs this test")
	}
	handler := func(strict bool) http.Handler {
		return httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			left, ok := budget.Remaining(r.Context())
			if !ok {
				fmt.Fprint(w, "none")
				return
			}
			fmt.Fprintf(w, "%d", left.Round(100*time.Millisecond).Milliseconds())
		}), edge.WithPolicy(&wire.Policy{Strict: strict, Max: 10 * time.Second}))
	}
	lenient := httptest.NewServer(handler(false))
	t.Cleanup(lenient.Close) // parallel subtests outlive a deferred call
	strict := httptest.NewServer(handler(true))
	t.Cleanup(strict.Close)

	huge := strings.Repeat("9", 100_000)
	cases := []struct {
		name         string
		headers      []string
		lenient      string // expected "status body" from the lenient server; a malformed value is ignored and Max applies
		strictStatus string
	}{
		{"negative", []string{"Request-Timeout-Ms: -5"}, "200 10000", "400"},
		{"plus sign", []string{"Request-Timeout-Ms: +5"}, "200 10000", "400"},
		{"eleven digits", []string{"Request-Timeout-Ms: 12345678901"}, "200 10000", "400"},
		{"arabic-indic digits", []string{"Request-Timeout-Ms: ١٢٣"}, "200 10000", "400"},
		{"fullwidth digits", []string{"Request-Timeout-Ms: １２３"}, "200 10000", "400"},
		{"space inside", []string{"Request-Timeout-Ms: 1 2"}, "200 10000", "400"},
		{"exponent", []string{"Request-Timeout-Ms: 1e300"}, "200 10000", "400"},
		{"huge value", []string{"Request-Timeout-Ms: " + huge}, "200 10000", "400"},
		{"grpc bad unit", []string{"Grpc-Timeout: 5X"}, "200 10000", "400"},
		{"grpc nine digits", []string{"Grpc-Timeout: 123456789m"}, "200 10000", "400"},
		{"clamped to max", []string{"Request-Timeout-Ms: 9999999999"}, "200 10000", "200"},
		{"repeated: strictest wins", []string{"Request-Timeout-Ms: 3000", "Request-Timeout-Ms: 2000"}, "200 2000", "200"},
		{"conflicting sources", []string{"Request-Timeout-Ms: 3000", "Grpc-Timeout: 1S", "Connect-Timeout-Ms: 2000"}, "200 1000", "200"},
		{"one bad among good", []string{"Request-Timeout-Ms: 2000", "Connect-Timeout-Ms: x"}, "200 2000", "400"},
		{"zero means expired", []string{"Request-Timeout-Ms: 0"}, "504 ", "504"},
	}
	run := func(t *testing.T, url string, headers []string) (string, string) {
		args := []string{"-sS", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}"}
		for _, h := range headers {
			args = append(args, "-H", h)
		}
		out, err := exec.Command(curl, append(args, url)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", headers, err, out)
		}
		i := strings.LastIndexByte(string(out), '\n')
		return string(out[i+1:]), strings.TrimSpace(string(out[:i]))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, body := run(t, lenient.URL, tc.headers)
			if status == "504" {
				body = ""
			}
			if got := status + " " + body; got != tc.lenient {
				t.Errorf("lenient: got %q, want %q", got, tc.lenient)
			}
			if status, _ := run(t, strict.URL, tc.headers); status != tc.strictStatus {
				t.Errorf("strict: status %s, want %s", status, tc.strictStatus)
			}
		})
	}
}
