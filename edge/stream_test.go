package edge_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

const ms = time.Millisecond

func TestStreamLimitsReceive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		l     edge.StreamLimits
		d     time.Duration
		limit edge.Limit
	}{
		{edge.StreamLimits{}, 0, edge.LimitNone},
		{edge.StreamLimits{Message: -ms, Idle: -ms}, 0, edge.LimitNone},
		{edge.StreamLimits{Message: 300 * ms}, 300 * ms, edge.LimitMessage},
		{edge.StreamLimits{Idle: 50 * ms}, 50 * ms, edge.LimitIdle},
		{edge.StreamLimits{Message: 300 * ms, Idle: 50 * ms}, 50 * ms, edge.LimitIdle},
		{edge.StreamLimits{Message: 40 * ms, Idle: time.Second}, 40 * ms, edge.LimitMessage},
		{edge.StreamLimits{Message: 40 * ms, Idle: 40 * ms}, 40 * ms, edge.LimitIdle},
	} {
		if d, limit := tc.l.Receive(); d != tc.d || limit != tc.limit {
			t.Errorf("%+v: Receive() = %v, %v; want %v, %v", tc.l, d, limit, tc.d, tc.limit)
		}
	}
}

// watched is a ClientWatch and what it reported, on a bubble's clock.
type watched struct {
	*edge.ClientWatch
	mu      sync.Mutex
	expired []edge.Expiry
}

func newWatched(l edge.StreamLimits) *watched {
	w := &watched{}
	w.ClientWatch = edge.NewClientWatch(l, func(e edge.Expiry) {
		w.mu.Lock()
		w.expired = append(w.expired, e)
		w.mu.Unlock()
	})
	return w
}

func (w *watched) expiries() []edge.Expiry {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]edge.Expiry(nil), w.expired...)
}

// send is one send that takes d.
func (w *watched) send(d time.Duration) {
	w.BeginSend()
	time.Sleep(d)
	w.EndSend(true)
}

// TestClientWatchSenderKeepsReceiveBound: a client that sends every 100 ms
// while it waits for an answer still sees its 300 ms receive budget run out,
// exactly 300 ms after its first unanswered message: sends have a timer of
// their own and do not restart the receive's.
func TestClientWatchSenderKeepsReceiveBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := newWatched(edge.StreamLimits{Message: 300 * ms})
		defer w.Stop()
		w.BeginReceive()
		start := time.Now()
		for range 10 {
			w.send(0)
			time.Sleep(100 * ms)
		}
		got := w.expiries()
		if len(got) != 1 {
			t.Fatalf("expiries %+v, want one", got)
		}
		if e := got[0]; e.Send || e.Limit != edge.LimitMessage || !e.Start.Equal(start) || e.Waited != 300*ms {
			t.Errorf("expiry %+v, want the receive's message budget, 300 ms from the first send", e)
		}
	})
}

// TestClientWatchClientPauses: the time a receive waits while the client has
// asked nothing is the client's own, and never counts: a request/response
// client that pauses 300 ms between its messages, against a server that
// answers in 2 ms, runs under a 100 ms per-message budget and a 50 ms idle
// timeout without an expiry.
func TestClientWatchClientPauses(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := newWatched(edge.StreamLimits{Message: 100 * ms, Idle: 50 * ms})
		defer w.Stop()
		for range 5 {
			w.BeginReceive()
			time.Sleep(300 * ms) // the client thinks
			w.send(0)
			time.Sleep(2 * ms) // the server answers
			w.EndReceive(true)
		}
		if got := w.expiries(); len(got) != 0 {
			t.Errorf("expiries %+v, want none: the server answered every message in 2 ms", got)
		}
	})
}

// TestClientWatchLimits: on the bubble's clock, each limit runs out exactly
// when it should, and the first one that does is the only one reported.
func TestClientWatchLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		l     edge.StreamLimits
		run   func(w *watched)
		start time.Duration // of the expiry, from the bubble's start
		want  edge.Expiry
	}{
		{"send held", edge.StreamLimits{Message: 40 * ms, Idle: ms}, func(w *watched) {
			w.BeginSend()
			time.Sleep(time.Second)
		}, 0, edge.Expiry{Limit: edge.LimitMessage, Send: true, Waited: 40 * ms}},
		{"server idle after a send", edge.StreamLimits{Message: time.Second, Idle: 30 * ms}, func(w *watched) {
			w.send(10 * ms)
			time.Sleep(50 * ms) // the client's pause before it receives
			w.BeginReceive()
			time.Sleep(time.Second)
		}, 60 * ms, edge.Expiry{Limit: edge.LimitIdle, Waited: 30 * ms}},
		{"receive budget once the send side closed", edge.StreamLimits{Message: 40 * ms}, func(w *watched) {
			w.BeginReceive()
			time.Sleep(70 * ms)
			w.CloseSend()
			time.Sleep(time.Second)
		}, 70 * ms, edge.Expiry{Limit: edge.LimitMessage, Waited: 40 * ms}},
		{"every receive awaited after the close", edge.StreamLimits{Idle: 40 * ms}, func(w *watched) {
			w.send(0)
			w.CloseSend()
			for range 3 { // a server stream's answers, 30 ms apart
				w.BeginReceive()
				time.Sleep(30 * ms)
				w.EndReceive(true)
			}
			w.BeginReceive()
			time.Sleep(time.Second)
		}, 90 * ms, edge.Expiry{Limit: edge.LimitIdle, Waited: 40 * ms}},
		{"the second answer of one message is not awaited", edge.StreamLimits{Message: 40 * ms}, func(w *watched) {
			w.send(0)
			w.BeginReceive()
			w.EndReceive(true)
			w.BeginReceive()
			time.Sleep(time.Second)
			w.send(0)
			time.Sleep(time.Second)
		}, time.Second, edge.Expiry{Limit: edge.LimitMessage, Waited: 40 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				begin := time.Now()
				w := newWatched(tc.l)
				defer w.Stop()
				tc.run(w)
				want := tc.want
				want.Start = begin.Add(tc.start)
				got := w.expiries()
				if len(got) != 1 || got[0] != want {
					t.Fatalf("expiries %+v, want exactly %+v", got, want)
				}
				if e, ok := w.Expired(); !ok || e != want {
					t.Errorf("Expired() = %+v, %v", e, ok)
				}
			})
		})
	}
}

// TestClientWatchStopped: after Stop, nothing runs out.
func TestClientWatchStopped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := newWatched(edge.StreamLimits{Message: 10 * ms, Idle: 10 * ms})
		w.send(0)
		w.BeginReceive()
		w.BeginSend()
		w.Stop()
		w.Stop()
		time.Sleep(time.Second)
		if got := w.expiries(); len(got) != 0 {
			t.Errorf("expiries %+v after Stop", got)
		}
		if _, ok := w.Expired(); ok {
			t.Error("Expired reports an expiry after Stop")
		}
	})
}

// TestClientWatchAllocations: once its timers exist, a watched send and
// receive allocate nothing.
func TestClientWatchAllocations(t *testing.T) {
	w := edge.NewClientWatch(edge.StreamLimits{Message: time.Hour, Idle: time.Hour}, func(edge.Expiry) {})
	defer w.Stop()
	if got := testing.AllocsPerRun(1000, func() {
		w.BeginSend()
		w.EndSend(true)
		w.BeginReceive()
		w.EndReceive(true)
	}); got != 0 {
		t.Errorf("%v allocations per send and receive, want 0", got)
	}
}

// stream is a server stream's receive with no network under it: Receive
// hands out queued messages, waits for more, and returns io.EOF once the
// stream ends.
type stream struct {
	msgs chan int
	end  chan struct{}
}

func newStream() *stream { return &stream{msgs: make(chan int, 16), end: make(chan struct{})} }

func (s *stream) recv(m any) error {
	select {
	case v := <-s.msgs:
		*m.(*int) = v
		return nil
	case <-s.end:
		return io.EOF
	}
}

var errQuiet = errors.New("client idle")

// TestIdleReceiverQuiet: on the bubble's clock, a Receive that waits for a
// client that sends nothing gives up exactly at the idle timeout, reports
// it once, and every later Receive returns the same error.
func TestIdleReceiverQuiet(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newStream()
		defer close(s.end)
		r := edge.NewIdleReceiver(50*ms, s.recv, errQuiet)
		defer r.Close()
		ctx := context.Background()
		s.msgs <- 7
		var m int
		if quiet, err := r.Receive(ctx, &m); quiet || err != nil || m != 7 {
			t.Fatalf("Receive = %v, %v, message %d; want message 7", quiet, err, m)
		}
		time.Sleep(time.Second) // the handler's own time does not count
		s.msgs <- 8
		if quiet, err := r.Receive(ctx, &m); quiet || err != nil || m != 8 {
			t.Fatalf("Receive = %v, %v, message %d; want message 8", quiet, err, m)
		}
		start := time.Now()
		quiet, err := r.Receive(ctx, &m)
		if waited := time.Since(start); !quiet || err != errQuiet || waited != 50*ms {
			t.Errorf("Receive = %v, %v after %v; want the quiet error after exactly 50ms", quiet, err, waited)
		}
		if quiet, err := r.Receive(ctx, &m); quiet || err != errQuiet {
			t.Errorf("a later Receive = %v, %v; want the quiet error, not reported again", quiet, err)
		}
		if !r.Quiet() {
			t.Error("Quiet() = false")
		}
	})
}

// TestIdleReceiverContext: a Receive returns the cause of the handler's
// context when it ends first, and a Receive after Close returns at once.
func TestIdleReceiverContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newStream()
		defer close(s.end)
		r := edge.NewIdleReceiver(time.Hour, s.recv, errQuiet)
		ctx, cancel := context.WithCancelCause(context.Background())
		cause := errors.New("budget over")
		time.AfterFunc(10*ms, func() { cancel(cause) })
		var m int
		if quiet, err := r.Receive(ctx, &m); quiet || err != cause {
			t.Errorf("Receive = %v, %v; want the context's cause", quiet, err)
		}
		r.Close()
		r.Close()
		if quiet, err := edge.NewIdleReceiver(time.Hour, s.recv, errQuiet).Receive(ctx, &m); quiet || err != cause {
			t.Errorf("Receive with a done context = %v, %v", quiet, err)
		}
		closed := edge.NewIdleReceiver(time.Hour, s.recv, errQuiet)
		closed.Close()
		if quiet, err := closed.Receive(context.Background(), &m); quiet || err == nil || r.Quiet() {
			t.Errorf("Receive after Close = %v, %v; want an error at once", quiet, err)
		}
	})
}

// TestIdleReceiverHandlerReturnsDuringReceive: a handler that receives in a
// goroutine of its own and returns (Close) while that goroutine is still in
// Receive, or about to call it again: no panic, no data race (run with
// -race), and every goroutine ends with the stream. 1,000 streams.
func TestIdleReceiverHandlerReturnsDuringReceive(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for i := range 1000 {
		s := newStream()
		r := edge.NewIdleReceiver(time.Hour, s.recv, errQuiet)
		ctx, cancel := context.WithCancel(context.Background())
		for range i % 4 {
			s.msgs <- i
		}
		wg.Go(func() { // the handler's reader
			var m int
			for {
				if _, err := r.Receive(ctx, &m); err != nil {
					return
				}
			}
		})
		// The handler returns, then the stream ends.
		if i%2 == 0 {
			cancel()
			r.Close()
		} else {
			r.Close()
			cancel()
		}
		close(s.end)
	}
	wg.Wait()
}

// messageTimeoutCase is one case of testdata/message-timeout.json, the
// table of Request-Message-Timeout-Ms decisions that grpcbudget's and
// connectbudget's tests also run through their servers.
type messageTimeoutCase struct {
	Name     string
	Off      bool   // no policy: enforcement off
	Trust    string // "none" or "" (the zero Trust)
	Strict   bool
	Max      string
	Own      string // the server's own per-message budget
	Values   []string
	Want     string
	Refused  bool
	Reported bool

	Policy *wire.Policy
	OwnD   time.Duration
	WantD  time.Duration
}

func messageTimeoutCases(t *testing.T) []messageTimeoutCase {
	t.Helper()
	b, err := os.ReadFile("testdata/message-timeout.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []messageTimeoutCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	dur := func(s string) time.Duration {
		if s == "" {
			return 0
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for i := range cases {
		c := &cases[i]
		c.OwnD, c.WantD = dur(c.Own), dur(c.Want)
		if !c.Off {
			c.Policy = &wire.Policy{Strict: c.Strict, Max: dur(c.Max)}
			if c.Trust == "none" {
				c.Policy.Trust = wire.SourcesNone
			}
		}
	}
	return cases
}

// TestMessageBudget is the table of Request-Message-Timeout-Ms decisions
// every adapter shares.
func TestMessageBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range messageTimeoutCases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			var malformed []budget.Event
			obs := budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
				if ev.Kind == budget.EventMalformed {
					malformed = append(malformed, ev)
				}
			})
			d, err := edge.MessageBudget(context.Background(), obs, tc.Policy, tc.OwnD, tc.Values)
			if tc.Refused {
				var pe *wire.ParseError
				if err == nil || !errors.As(err, &pe) || pe.Header != wire.HeaderRequestMessageTimeout || !errors.Is(err, wire.ErrMalformed) {
					t.Fatalf("MessageBudget = %v, %v; want a refusal naming the header", d, err)
				}
				return
			}
			if err != nil || d != tc.WantD {
				t.Fatalf("MessageBudget = %v, %v; want %v", d, err, tc.WantD)
			}
			if tc.Reported != (len(malformed) == 1) || len(malformed) > 1 {
				t.Errorf("%d malformed events, want reported=%v", len(malformed), tc.Reported)
			}
			for _, ev := range malformed {
				if ev.Stage != edge.MessageTimeoutName || !errors.Is(ev.Err, wire.ErrMalformed) {
					t.Errorf("event %+v, want stage %s and a malformed error", ev, edge.MessageTimeoutName)
				}
			}
		})
	}
}

// FuzzMessageBudget feeds MessageBudget, under a strict policy, what a
// client may send as Request-Message-Timeout-Ms, as one or two values.
// Whatever arrives: no panic; either a positive budget of at most 10 digits
// of milliseconds (less the tenth kept back) and no error, nothing at all
// for an absent value, or an error matching wire.ErrMalformed that names
// the header and quotes at most 32 bytes.
func FuzzMessageBudget(f *testing.F) {
	f.Add("1000", "", false)
	f.Add("0", "", false)
	f.Add("-5", "", false)
	f.Add("9999999999", "", false)
	f.Add("99999999999", "", false)
	f.Add("1000", "2000", true)
	f.Add("1e3", "", false)
	f.Add(" 15 ", "", false)
	f.Add("", "", false)
	f.Add("\x00\xff", "", false)
	strict := &wire.Policy{Strict: true}
	f.Fuzz(func(t *testing.T, a, b string, two bool) {
		vals := []string{a}
		if two {
			vals = append(vals, b)
		}
		d, err := edge.MessageBudget(context.Background(), nil, strict, 0, vals)
		if err != nil {
			var pe *wire.ParseError
			if !errors.Is(err, wire.ErrMalformed) || !errors.As(err, &pe) || pe.Header != wire.HeaderRequestMessageTimeout || len(pe.Value) > 32 {
				t.Fatalf("%q: error %v, want a ParseError naming %s", vals, err, wire.HeaderRequestMessageTimeout)
			}
			if d != 0 {
				t.Fatalf("%q: budget %v with an error", vals, d)
			}
			return
		}
		if d <= 0 || d > 9_999_999_999*ms || d%(ms/10) != 0 {
			t.Fatalf("%q: budget %v out of range", vals, d)
		}
	})
}

// BenchmarkClientWatch is what the rule costs a client stream per message
// sent and answer received: two lock round trips and two timer resets each.
func BenchmarkClientWatch(b *testing.B) {
	w := edge.NewClientWatch(edge.StreamLimits{Message: time.Hour, Idle: time.Hour}, func(edge.Expiry) {})
	defer w.Stop()
	b.ReportAllocs()
	for b.Loop() {
		w.BeginSend()
		w.EndSend(true)
		w.BeginReceive()
		w.EndReceive(true)
	}
}

// BenchmarkIdleReceiver is what the idle timeout costs a server stream per
// message: two channel handoffs with the receiving goroutine and a timer
// reset.
func BenchmarkIdleReceiver(b *testing.B) {
	r := edge.NewIdleReceiver(time.Hour, func(any) error { return nil }, errQuiet)
	defer r.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Receive(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}
