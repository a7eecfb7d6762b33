package httpbudget_test

import (
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// FuzzHandler sends hostile combinations of every deadline header through a
// real handler under a strict policy with a Max, and under its lenient twin.
// Whatever arrives: no panic; the answer is 200, 400 (strict only) or 504; a
// refused request never runs the handler; the handler never has more than Max.
func FuzzHandler(f *testing.F) {
	f.Add("1500", "", "", "", "", "", "", "", false)
	f.Add("0", "", "", "", "", "", "", "", false)
	f.Add("3600000", "1", "99999999H", "9999999999", "999999999999999", "9999999999999999999", "1", "1000", true)
	f.Add("5,  300 ,x", "1700000000000", "0n", ",,,,", "-1", "+5", "１２３", "0", false)
	f.Add("", "", "2S", "", "", "", "", "3", true)
	const max = time.Second
	policy := wire.Policy{Max: max, Min: time.Millisecond, AnswerMargin: time.Millisecond, Trust: wire.SourcesAll}
	strictPolicy := policy
	strictPolicy.Strict = true

	type run struct {
		ran  bool
		left time.Duration
		ok   bool
	}
	var got run
	next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		dl, ok := r.Context().Deadline()
		got = run{ran: true, left: time.Until(dl), ok: ok}
	})
	lenient := httpbudget.NewHandler(next, edge.WithPolicy(&policy))
	strict := httpbudget.NewHandler(next, edge.WithPolicy(&strictPolicy))

	f.Fuzz(func(t *testing.T, rt, rd, grpc, connect, envoy, xrd, ttl, attempt string, connectProto bool) {
		for _, isStrict := range []bool{false, true} {
			req := httptest.NewRequest(http.MethodPost, "/", nil)
			// Set the map directly: a hostile peer's bytes, not what Header.Set would allow.
			req.Header = http.Header{
				wire.HeaderRequestTimeout:       {rt, connect},
				wire.HeaderRequestDeadline:      {rd},
				"Grpc-Timeout":                  {grpc},
				wire.HeaderConnectTimeout:       {connect},
				wire.HeaderEnvoyExpectedTimeout: {envoy},
				wire.HeaderXRequestDeadline:     {xrd},
				"Context-Ttl-Ms":                {ttl},
				"L5d-Ctx-Deadline":              {rd + " " + xrd},
				wire.HeaderRequestAttempt:       {attempt},
			}
			if connectProto {
				req.Header["Connect-Protocol-Version"] = []string{"1"}
			}
			h := lenient
			if isStrict {
				h = strict
			}
			got = run{}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			switch {
			case rec.Code == http.StatusOK:
				if !got.ran || !got.ok || got.left > max {
					t.Fatalf("strict %v: 200 with the handler run %v, deadline %v, %v left; want it run with at most %v",
						isStrict, got.ran, got.ok, got.left, max)
				}
			case rec.Code == http.StatusGatewayTimeout || rec.Code == http.StatusBadRequest && isStrict:
				if got.ran {
					t.Fatalf("strict %v: refused with %d but the handler ran", isStrict, rec.Code)
				}
			default:
				t.Fatalf("strict %v: status %d; want 200, 504 or (strict) 400", isStrict, rec.Code)
			}
		}
	})
}
