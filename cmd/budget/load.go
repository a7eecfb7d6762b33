package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// outcome is what the user saw for one request.
type outcome struct {
	latency time.Duration
	ok      bool   // an answer arrived
	rung    string // which rung of the last stage answered
	stage   string // the stage that failed, when none did
	reason  string // why it failed: refused, timeout, canceled, failed or cut-off
}

// cutOff is the reason of a request the load generator itself gave up on at
// its safety limit.
const cutOff = "cut-off"

// load sends n requests to url with conc of them in flight at a time, each cut
// off after limit, and returns what each one saw, in the order they were
// sent. Before sending request i it counts it in t, so dependencies with a
// slowdown fault slow down at the same request in every pattern. done is
// called after each request (from several goroutines).
func load(ctx context.Context, client *http.Client, url string, n, conc int, limit time.Duration, t *traffic, done func()) []outcome {
	out := make([]outcome, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(conc, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t.sent.Add(1)
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
func request(ctx context.Context, client *http.Client, url string, limit time.Duration) outcome {
	ctx, cancel := context.WithTimeoutCause(ctx, limit, errCutOff)
	defer cancel()
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return outcome{reason: "failed", stage: "client"}
	}
	resp, err := client.Do(req)
	if err != nil {
		o := outcome{latency: time.Since(start), stage: "request", reason: "failed"}
		if errors.Is(context.Cause(ctx), errCutOff) {
			o.reason = cutOff
		}
		return o
	}
	var ans edgeAnswer
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	o := outcome{latency: time.Since(start)}
	if err != nil {
		o.stage, o.reason = "request", "failed"
		if errors.Is(context.Cause(ctx), errCutOff) {
			o.reason = cutOff
		}
		return o
	}
	_ = json.Unmarshal(body, &ans)
	if resp.StatusCode == http.StatusOK {
		o.ok, o.rung = true, ans.Rung
		return o
	}
	o.stage, o.reason = ans.Stage, ans.Reason
	if o.stage == "" {
		o.stage, o.reason = "edge", "failed"
	}
	return o
}

var errCutOff = errors.New("cut off at the demo's safety limit")
