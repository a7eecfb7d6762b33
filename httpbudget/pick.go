package httpbudget

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
// [Picker.Pick] returns, which is given the response and error of the
// request. Latency is learned from successes only. What a request's end
// says of its replica:
//
//	1xx, 2xx, 3xx          a success: a latency sample
//	408, 429, 500, 502,
//	503, 504, any 5xx
//	but 501                a failure of the replica, however fast (it sheds,
//	                       is overloaded or broken); a 408 or 504 at the
//	                       request's own deadline is a cut-off
//	other 4xx, 501         an answer of the application (not found, bad
//	                       request, forbidden): the replica is alive, which
//	                       ends a run of failures, and its speed at refusing
//	                       is no latency
//	error, at the request's
//	deadline               a cut-off: a lower bound of the latency
//	error matching
//	context.Canceled       nothing: the caller gave up
//	any other error        a failure (connection refused or reset, or a
//	                       "deadline exceeded" well before the deadline)
//
// A replica that fails fast is thus never the fastest. A replica whose
// recent latency exceeds 4 times the best one's (by at least 2 ms, its
// median confirming it), or failing 5 requests in a row, is ejected: it
// receives only probes. One request in 100 is due as a probe while a
// replica is ejected, slower than twice the best (by 2 ms) or unfit for the
// request (given to a request with time for the replica's estimate; such
// replicas take the probes in turn). A replica ejected for failures returns
// at its first probe that succeeds or answers, one ejected for its latency
// after 3 probes in a row that succeed fast: after a fault ends (and the
// requests the replica held then have ended), a replica is chosen again
// within 5 × m × 100 requests, plus one per caller and one per replica, m
// the replicas being probed (see package
// [github.com/timebudget/budget/edge/pick]).
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
// function to call, once, when the request has ended, with what
// [http.Client.Do] (or [http.RoundTripper.RoundTrip]) returned:
//
//	resp, err := client.Do(req)
//	done(resp, err)
//
// The status of resp and err say how the replica did (see [Picker]): a 429
// or a 503 answered at once is a failure, not a fast success. The latency
// is the time to the response's header. done reads only resp.StatusCode;
// resp may be nil, and a caller using another client may pass
// &http.Response{StatusCode: code}.
func (p *Picker) Pick(ctx context.Context) (baseURL string, done func(resp *http.Response, err error)) {
	if p == nil {
		return "", func(*http.Response, error) {}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	i, probe := p.chooser.Choose(ctx, start, p.reps)
	r := p.reps[i]
	r.Begin()
	deadline, has := ctx.Deadline()
	var ended atomic.Bool
	return p.urls[i], func(resp *http.Response, err error) {
		if ended.Swap(true) {
			return
		}
		end := time.Now()
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		p.chooser.Done(r, start, end, probe, resultOf(code, err, pick.CutOff(start, end, deadline, has)))
	}
}

// resultOf says what a request's end, with status code (0 for none) and
// err, tells of its replica; cutOff says it reached its own deadline.
func resultOf(code int, err error, cutOff bool) pick.Result {
	switch {
	case err != nil && errors.Is(err, context.Canceled) && !cutOff:
		return pick.Canceled
	case err != nil:
		if cutOff {
			return pick.Expired
		}
		return pick.Failed
	case code == http.StatusGatewayTimeout || code == http.StatusRequestTimeout:
		if cutOff {
			return pick.Expired
		}
		return pick.Failed
	case code == http.StatusTooManyRequests || (code >= 500 && code != http.StatusNotImplemented):
		return pick.Failed
	case code >= 400:
		return pick.Answered
	}
	return pick.OK
}
