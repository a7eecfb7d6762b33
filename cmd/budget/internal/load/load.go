package load

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/timebudget/budget/cmd/budget/internal/dependency"
	"github.com/timebudget/budget/cmd/budget/internal/pattern"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome is what the user saw for one request.
type Outcome struct {
	Latency time.Duration
	Ok      bool   // an answer arrived
	Rung    string // which rung of the last stage answered
	Stage   string // the stage that failed, when none did
	Reason  string // why it failed: refused, timeout, canceled, failed or cut-off
}

// CutOff is the reason of a request the load generator itself gave up on at
// its safety limit.
const CutOff = "cut-off"

// Run sends n requests to url with conc of them in flight at a time, each cut
// off after limit, and returns what each one saw, in the order they were
// sent. Before sending request i it counts it in t, so dependencies with a
// slowdown fault slow down at the same request in every pattern. done is
// called after each request (from several goroutines).
func Run(ctx context.Context, client *http.Client, url string, n, conc int, limit time.Duration, t *dependency.Traffic, done func()) []Outcome {
	out := make([]Outcome, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(conc, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t.Sent.Add(1)
				out[i] = request(ctx, client, url+"?i="+strconv.Itoa(i), limit)
				if done != nil {
					done()
				}
			}
		})
	}
	wg.Wait()
	return out
}

// request sends one request as a user who waits at most limit.
func request(ctx context.Context, client *http.Client, url string, limit time.Duration) Outcome {
	ctx, cancel := context.WithTimeoutCause(ctx, limit, errCutOff)
	defer cancel()
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Outcome{Reason: "failed", Stage: "client"}
	}
	resp, err := client.Do(req)
	if err != nil {
		o := Outcome{Latency: time.Since(start), Stage: "request", Reason: "failed"}
		if errors.Is(context.Cause(ctx), errCutOff) {
			o.Reason = CutOff
		}
		return o
	}
	var ans pattern.Answer
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	o := Outcome{Latency: time.Since(start)}
	if err != nil {
		o.Stage, o.Reason = "request", "failed"
		if errors.Is(context.Cause(ctx), errCutOff) {
			o.Reason = CutOff
		}
		return o
	}
	_ = json.Unmarshal(body, &ans)
	if resp.StatusCode == http.StatusOK {
		o.Ok, o.Rung = true, ans.Rung
		return o
	}
	o.Stage, o.Reason = ans.Stage, ans.Reason
	if o.Stage == "" {
		o.Stage, o.Reason = "edge", "failed"
	}
	return o
}

var errCutOff = errors.New("cut off at the demo's safety limit")
