package httpbudget_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// debugJSON is the part of the page's JSON the tests read.
type debugJSON struct {
	Rule string `json:"suggested_timeout_rule"`
	Ops  []struct {
		Name        string     `json:"name"`
		Samples     int        `json:"samples"`
		P50MS       float64    `json:"p50_ms"`
		P99MS       float64    `json:"p99_ms"`
		SuggestedMS float64    `json:"suggested_timeout_ms"`
		State       string     `json:"state"`
		Regime      string     `json:"regime"`
		RegimeSince *time.Time `json:"regime_since"`
		Refusals    int        `json:"refusals"`
	} `json:"ops"`
	Minutes  []string `json:"minutes"`
	Refusals []struct {
		Reason string `json:"reason"`
		Counts []int  `json:"counts"`
		Total  int    `json:"total"`
	} `json:"refusals"`
	Recent []struct {
		Stage    string  `json:"stage"`
		Reason   string  `json:"reason"`
		BudgetMS float64 `json:"budget_ms"`
		Events   []struct {
			Kind    string `json:"kind"`
			Stage   string `json:"stage"`
			Outcome string `json:"outcome"`
		} `json:"events"`
	} `json:"recent"`
}

// hostile is an op name that would run a script if it were written
// unescaped.
const hostile = `<script>alert("op")</script>`

// debugRig is a server with a debug page and ops in every admission state.
type debugRig struct {
	page     *httpbudget.DebugPage
	srv      *httptest.Server
	geometry *budget.Op
	pricing  *budget.Op
}

func newDebugRig(t *testing.T) *debugRig {
	t.Helper()
	r := &debugRig{page: httpbudget.NewDebugPage()}
	r.geometry = &budget.Op{Name: "geometry"}
	r.pricing = &budget.Op{Name: "pricing", ProbeEvery: -1}
	slow := &budget.Op{Name: "slow", Cap: 5 * time.Millisecond}
	for range 50 {
		r.geometry.Estimator.Record(2 * time.Millisecond)
		r.pricing.Estimator.Record(5 * time.Second) // far more than any request here has
	}
	r.page.Register(r.geometry, r.pricing, slow, &budget.Op{Name: "fresh"}, &budget.Op{Name: hostile}, nil, r.geometry)

	mux := http.NewServeMux()
	mux.HandleFunc("/quote", func(w http.ResponseWriter, req *http.Request) {
		ctx := req.Context()
		_, hasDeadline := ctx.Deadline()
		if err := r.pricing.Do(ctx, func(context.Context) error { return nil }); err == nil && hasDeadline {
			t.Error("pricing was admitted; the test needs it refused")
		}
		_ = r.geometry.Do(ctx, func(context.Context) error { return nil })
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, req *http.Request) {
		_ = slow.Do(req.Context(), func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	})
	app := httpbudget.NewHandler(mux, edge.WithObserver(r.page.Observer()))
	root := http.NewServeMux()
	root.Handle("/", app)
	root.Handle("/debug/budget", r.page)
	r.srv = httptest.NewServer(root)
	t.Cleanup(r.srv.Close)
	return r
}

// traffic makes one request refused inside, one expired inside, one refused
// on arrival, one refused by the client and one with a malformed header.
func (r *debugRig) traffic(t *testing.T) {
	t.Helper()
	send := func(path, timeout string) {
		req, _ := http.NewRequest(http.MethodGet, r.srv.URL+path, nil)
		req.Header.Set(wire.HeaderRequestTimeout, timeout)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	send("/quote", "1000")
	send("/slow", "1000")
	send("/quote", "0")
	send("/quote", "junk")

	ctx, cancel := budget.Config{Observer: r.page.Observer()}.Start(context.Background(), time.Second)
	defer cancel()
	client := &http.Client{Transport: httpbudget.NewTransport(nil, edge.WithMinUseful(time.Hour),
		edge.WithClientStage(`<img src=x onerror="alert('stage')">`))}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.srv.URL+"/quote", nil)
	if _, err := client.Do(req); !errors.Is(err, budget.ErrInsufficient) {
		t.Fatalf("local refusal: %v", err)
	}
}

func fetch(t *testing.T, url, accept string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestDebugPageJSON(t *testing.T) {
	t.Parallel()
	r := newDebugRig(t)
	r.traffic(t)

	for _, tc := range []struct{ name, query, accept string }{
		{"format=json", "?format=json", ""},
		{"Accept", "", "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := fetch(t, r.srv.URL+"/debug/budget"+tc.query, tc.accept)
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			var v debugJSON
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				t.Fatal(err)
			}
			checkDebugJSON(t, r, v)
		})
	}
}

func checkDebugJSON(t *testing.T, r *debugRig, v debugJSON) {
	t.Helper()
	if !strings.Contains(v.Rule, "3 × measured p99") {
		t.Errorf("rule %q does not state the 3 × p99 rule", v.Rule)
	}
	states := map[string]string{}
	var names []string
	for _, op := range v.Ops {
		states[op.Name] = op.State
		names = append(names, op.Name)
		if op.Name == "geometry" {
			// At least the op's MinSamples: once the estimator's windows
			// have turned, the latest MinSamples samples stand in for them.
			if op.Samples < 5 || op.P50MS < 1.9 || op.P50MS > 2.1 {
				t.Errorf("geometry: %d samples, p50 %.3f ms; want ≥ 5 samples around 2 ms", op.Samples, op.P50MS)
			}
			if want := float64(r.geometry.SuggestedTimeout()) / 1e6; op.SuggestedMS < want-0.01 || op.SuggestedMS > want+0.01 || op.SuggestedMS < 3*op.P99MS-0.01 {
				t.Errorf("geometry: suggested %.3f ms, want Op.SuggestedTimeout %.3f ms = 3 × p99 (%.3f ms)", op.SuggestedMS, want, op.P99MS)
			}
		}
		if op.Name == "pricing" && op.Refusals != 1 {
			t.Errorf("pricing: %d refusals, want 1", op.Refusals)
		}
	}
	if got := strings.Join(names, ","); got != hostile+",fresh,geometry,pricing,slow" {
		t.Errorf("ops %s: want each registered op once, sorted", got)
	}
	for name, want := range map[string]string{"geometry": "admitting", "pricing": "refusing", "fresh": "learning"} {
		if states[name] != want {
			t.Errorf("%s: state %q, want %q", name, states[name], want)
		}
	}
	totals := map[string]int{}
	for _, row := range v.Refusals {
		totals[row.Reason] = row.Total
		if len(row.Counts) != len(v.Minutes) || row.Counts[len(row.Counts)-1] != row.Total {
			t.Errorf("%s: counts %v over minutes %v: want everything in the last minute", row.Reason, row.Counts, v.Minutes)
		}
	}
	for reason, want := range map[string]int{"insufficient": 2, "expired": 2, "malformed": 1} {
		if totals[reason] != want {
			t.Errorf("%d refusals for %s, want %d (all: %v)", totals[reason], reason, want, totals)
		}
	}
	if len(v.Recent) != 4 {
		t.Fatalf("%d recent requests, want 4", len(v.Recent))
	}
	first := v.Recent[len(v.Recent)-1] // oldest: the refused quote
	var kinds []string
	for _, ev := range first.Events {
		kinds = append(kinds, ev.Kind+":"+ev.Stage)
	}
	if got := strings.Join(kinds, " "); got != "arrival:request refuse:pricing attempt:geometry" || first.BudgetMS < 900 || first.BudgetMS > 1000 {
		t.Errorf("oldest recent request: %s, budget %.1f ms; want the whole ledger of the refused quote", got, first.BudgetMS)
	}
	if v.Recent[0].Stage != `<img src=x onerror="alert('stage')">` {
		t.Errorf("newest recent request is %q, want the client's refusal", v.Recent[0].Stage)
	}
}

func TestDebugPageHTML(t *testing.T) {
	t.Parallel()
	r := newDebugRig(t)
	r.traffic(t)
	resp, page := fetch(t, r.srv.URL+"/debug/budget", "text/html")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("Content-Type %q", ct)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	for _, want := range []string{
		`<table id="ops">`, `data-op="geometry"`, `state-refusing`, `state-learning`, `3 × measured p99`,
		`data-reason="insufficient"`, `<section class="waterfall">`, `class="bar bad"`,
		`&lt;script&gt;alert(&#34;op&#34;)&lt;/script&gt;`, `&lt;img src=x onerror=&#34;alert(&#39;stage&#39;)&#34;&gt;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, bad := range []string{"<script", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %s: something was written unescaped", bad)
		}
	}
	if n := strings.Count(page, `<div class="bar`); n < 6 {
		t.Errorf("%d waterfall bars, want one per ledger event (at least 6)", n)
	}
}

func TestDebugPageMethods(t *testing.T) {
	t.Parallel()
	page := httpbudget.NewDebugPage()
	for _, tc := range []struct {
		method string
		want   int
	}{
		{http.MethodGet, http.StatusOK},
		{http.MethodHead, http.StatusOK},
		{http.MethodPost, http.StatusMethodNotAllowed},
		{http.MethodDelete, http.StatusMethodNotAllowed},
	} {
		rec := httptest.NewRecorder()
		page.ServeHTTP(rec, httptest.NewRequest(tc.method, "/debug/budget", nil))
		if rec.Code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.method, rec.Code, tc.want)
		}
	}
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/budget", nil))
	if !strings.Contains(rec.Body.String(), "No operations registered") {
		t.Error("an empty page does not say it has no operations")
	}
}

// TestDebugPageBounded checks that the page keeps only the last Recent
// requests, newest first, one entry per request however many refusals it
// had.
func TestDebugPageBounded(t *testing.T) {
	t.Parallel()
	page := &httpbudget.DebugPage{Recent: 3}
	obs := page.Observer()
	for i := range 10 {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		stage := "op" + string(rune('a'+i))
		obs.Observe(ctx, budget.Event{Kind: budget.EventRefuse, Stage: stage, Outcome: budget.OutcomeInsufficient})
		obs.Observe(ctx, budget.Event{Kind: budget.EventRefuse, Stage: stage, Outcome: budget.OutcomeShed})
		cancel()
	}
	var v debugJSON
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/budget?format=json", nil))
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	var stages []string
	for _, e := range v.Recent {
		stages = append(stages, e.Stage)
	}
	if got := strings.Join(stages, ","); got != "opj,opi,oph" {
		t.Errorf("recent requests %s, want the last three, newest first", got)
	}
}

// TestDebugPageProbing checks that an op refusing calls shows as probing
// while probes go through.
func TestDebugPageProbing(t *testing.T) {
	t.Parallel()
	page := httpbudget.NewDebugPage()
	op := &budget.Op{Name: "pricing"}
	for range 50 {
		op.Estimator.Record(5 * time.Second)
	}
	page.Register(op)
	page.Observer().Observe(context.Background(), budget.Event{Kind: budget.EventAttempt, Stage: "pricing", Probe: true})
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/budget?format=json", nil))
	var v debugJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Ops) != 1 || v.Ops[0].State != "probing" {
		t.Errorf("ops %+v, want pricing probing", v.Ops)
	}
}

// TestDebugPageRegime checks that the page says which regime each op is in
// and since when: an op refusing a hung dependency shows as refusing since
// its first refusal, a healthy one as measuring with no start.
func TestDebugPageRegime(t *testing.T) {
	t.Parallel()
	page := httpbudget.NewDebugPage()
	healthy := &budget.Op{Name: "cache"}
	hung := &budget.Op{Name: "db", Prior: 5 * time.Millisecond}
	now := time.Now()
	for i := range 10 {
		hung.EndAt(now.Add(-time.Second), now.Add(-time.Duration(i)*time.Millisecond), budget.OutcomeExpired, false)
	}
	if dec := hung.BeginAt(now, budget.Ask{Available: 50 * time.Millisecond}); dec.Admit {
		t.Fatalf("the hung op admitted a call: %+v", dec)
	}
	page.Register(healthy, hung)
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/budget?format=json", nil))
	var v debugJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, op := range v.Ops {
		got[op.Name] = op.Regime
		switch op.Name {
		case "cache":
			if op.RegimeSince != nil {
				t.Errorf("cache: measuring since %v, want no start", op.RegimeSince)
			}
		case "db":
			if op.RegimeSince == nil || op.RegimeSince.Sub(now).Abs() > time.Millisecond {
				t.Errorf("db: refusing since %v, want its first refusal at %v", op.RegimeSince, now)
			}
		}
	}
	if got["cache"] != "measuring" || got["db"] != "refusing" {
		t.Fatalf("regimes %v, want cache measuring and db refusing", got)
	}
	rec = httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/budget", nil))
	if body := rec.Body.String(); !strings.Contains(body, `<td class="regime">refusing <span`) {
		t.Errorf("the page does not show db as refusing:\n%s", body)
	}
}

// TestDebugObserverAllocations pins the cost of the page's observer on the
// events of requests that go well: nothing.
func TestDebugObserverAllocations(t *testing.T) {
	page := httpbudget.NewDebugPage()
	page.Register(&budget.Op{Name: "geometry"})
	obs := page.Observer()
	ctx := context.Background()
	for _, ev := range []budget.Event{
		{Kind: budget.EventArrival, Stage: "request", Remaining: time.Second},
		{Kind: budget.EventAttempt, Stage: "geometry", Outcome: budget.OutcomeOK, Duration: time.Millisecond},
		{Kind: budget.EventQueue, Stage: "queue", Outcome: budget.OutcomeOK},
	} {
		if n := testing.AllocsPerRun(100, func() { obs.Observe(ctx, ev) }); n != 0 {
			t.Errorf("%s: %v allocations, want 0", ev.Kind, n)
		}
	}
}

// TestDebugPageZeroValues runs the page's entry points with a nil page, nil
// arguments and a bare request: nothing panics, and each answers as
// documented.
func TestDebugPageZeroValues(t *testing.T) {
	t.Parallel()
	var nilPage *httpbudget.DebugPage
	checks := []struct {
		name string
		ok   func() bool
	}{
		{"Register on a nil page", func() bool { nilPage.Register(&budget.Op{Name: "x"}); return true }},
		{"Observer of a nil page", func() bool {
			nilPage.Observer().Observe(context.Background(), budget.Event{Kind: budget.EventRefuse})
			return true
		}},
		{"nil page serves an empty page", func() bool {
			rec := httptest.NewRecorder()
			nilPage.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/budget", nil))
			return rec.Code == http.StatusOK && strings.Contains(rec.Body.String(), "No operations registered")
		}},
		{"nil request", func() bool {
			rec := httptest.NewRecorder()
			httpbudget.NewDebugPage().ServeHTTP(rec, nil)
			return rec.Code == http.StatusBadRequest
		}},
		{"bare request (no URL)", func() bool {
			rec := httptest.NewRecorder()
			httpbudget.NewDebugPage().ServeHTTP(rec, &http.Request{Method: http.MethodGet})
			return rec.Code == http.StatusOK
		}},
		{"nil context, nil op, zero event", func() bool {
			page := httpbudget.NewDebugPage()
			page.Register(nil)
			var ctx context.Context
			page.Observer().Observe(ctx, budget.Event{Kind: budget.EventRefuse})
			page.Observer().Observe(ctx, budget.Event{})
			rec := httptest.NewRecorder()
			page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/budget?format=json", nil))
			return rec.Code == http.StatusOK && strings.Contains(rec.Body.String(), `"reason": "none"`)
		}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panicked: %v", r)
				}
			}()
			if !c.ok() {
				t.Fatal("did not give the documented answer")
			}
		})
	}
}
