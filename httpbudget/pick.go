package httpbudget

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge/pick"
)

// Picker chooses, for each request, one of a fixed set of base URLs (the
// replicas of a service), the way grpcbudget's budget_aware balancer
// chooses a gRPC endpoint: among the replicas whose measured latency fits
// the time the request has left (its context's deadline), the better
// expected completion of two drawn at random, latency × (requests in flight
// + 1), latencies within twice the best replica's counting as the best's;
// when none fits, the best expected completion, leaving the decision
// to admission ([budget.Op], or [Transport]'s minimum useful time).
//
// Per replica it keeps a censoring-aware latency estimate (a request cut off
// by its deadline counts as taking at least that long), a smoothed recent
// latency and the requests in flight, all learned from the done function
// [Picker.Pick] returns. A replica whose recent latency exceeds 4 times the
// best one's (by at least 2 ms, its median confirming it), or failing 5
// requests in a row, is ejected: it receives only probes, one request in
// 100 (given to a request with time for the replica's estimate), until
// probes show its latency halved and within twice the best's, or a success
// after failures.
// Ejection and recovery are reported as [budget.EventEject] and
// [budget.EventRecover] events to the observer of the budget of the request
// that noticed them, and to the Picker's own observer.
//
// A Picker is safe for concurrent use. A nil *Picker picks "" and records
// nothing.
type Picker struct {
	urls    []string
	reps    []*pick.Replica
	chooser *pick.Balancer
}

// NewPicker returns a Picker over baseURLs (absolute http or https URLs,
// each given once), reporting ejections and recoveries to observer as well
// (nil for none).
func NewPicker(baseURLs []string, observer budget.Observer) (*Picker, error) {
	if len(baseURLs) == 0 {
		return nil, errors.New("httpbudget: NewPicker needs at least one base URL")
	}
	p := &Picker{
		urls:    make([]string, len(baseURLs)),
		reps:    make([]*pick.Replica, len(baseURLs)),
		chooser: pick.New(pick.Config{Stage: "httpbudget", Observer: observer}),
	}
	seen := make(map[string]bool, len(baseURLs))
	for i, s := range baseURLs {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("httpbudget: NewPicker: base URL %d: %w", i, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("httpbudget: NewPicker: base URL %d (%q) is not an absolute http or https URL", i, s)
		}
		if seen[s] {
			return nil, fmt.Errorf("httpbudget: NewPicker: base URL %q is given twice", s)
		}
		seen[s] = true
		p.urls[i] = s
		p.reps[i] = p.chooser.NewReplica(s)
	}
	return p, nil
}

// Pick returns the base URL for a request with ctx's deadline, and the
// function to call, once, when the request has ended: with nil when the
// replica answered (an application error such as 404 included), with the
// request's error otherwise, or with an error of the caller's for a 5xx
// answer that says the replica is failing. An error matching
// [context.DeadlineExceeded] is recorded as a cut-off latency sample, one
// matching [context.Canceled] as nothing, any other as a failure.
func (p *Picker) Pick(ctx context.Context) (baseURL string, done func(err error)) {
	if p == nil {
		return "", func(error) {}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	i, probe := p.chooser.Choose(ctx, start, p.reps)
	r := p.reps[i]
	r.Begin()
	var ended atomic.Bool
	return p.urls[i], func(err error) {
		if ended.Swap(true) {
			return
		}
		p.chooser.Done(r, start, time.Now(), probe, resultOf(err))
	}
}

func resultOf(err error) pick.Result {
	switch {
	case err == nil:
		return pick.OK
	case errors.Is(err, context.DeadlineExceeded):
		return pick.Expired
	case errors.Is(err, context.Canceled):
		return pick.Canceled
	}
	return pick.Failed
}
