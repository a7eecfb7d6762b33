package amqpbudget_test

import (
	"context"
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/amqpbudget"
)

// channelFunc is a Channel whose publish is a function.
type channelFunc func(ctx context.Context, msg amqp.Publishing) error

func (f channelFunc) PublishWithContext(ctx context.Context, _, _ string, _, _ bool, msg amqp.Publishing) error {
	return f(ctx, msg)
}

// Publish classifies its errors: the refusal, a closed channel and a
// context done before publishing are NotSent; any other error may have
// left, and is MaybeExecuted. Before the change they were unclassified.
func TestPublishClassifiesItsErrors(t *testing.T) {
	t.Parallel()
	live, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	broken := errors.New("write: broken pipe")
	cases := []struct {
		name string
		ctx  context.Context
		err  error // what the channel returns
		want budget.Sent
	}{
		{"refused: too little time", expiredContext(t), nil, budget.NotSent},
		{"closed channel", live, amqp.ErrClosed, budget.NotSent},
		{"context done before publishing", done, context.Canceled, budget.NotSent},
		{"write failed", live, broken, budget.MaybeExecuted},
	}
	for _, tc := range cases {
		called := false
		ch := channelFunc(func(ctx context.Context, _ amqp.Publishing) error {
			called = true
			if err := ctx.Err(); err != nil {
				return err
			}
			return tc.err
		})
		err := amqpbudget.Publish(tc.ctx, ch, "", "q", false, false, amqp.Publishing{})
		if got, ok := budget.SentOf(err); err == nil || !ok || got != tc.want {
			t.Errorf("%s: %v classified %v (%v), want %v", tc.name, err, got, ok, tc.want)
		}
		if tc.err != nil && !errors.Is(err, tc.err) {
			t.Errorf("%s: %v does not match the channel's %v", tc.name, err, tc.err)
		}
		if tc.want == budget.NotSent && tc.err == nil && called {
			t.Errorf("%s: the refused message was published", tc.name)
		}
	}
	ok := channelFunc(func(context.Context, amqp.Publishing) error { return nil })
	if err := amqpbudget.Publish(live, ok, "", "q", false, false, amqp.Publishing{}); err != nil {
		t.Fatalf("a published message: %v", err)
	}
}

// expiredContext returns a context whose budget has run out.
func expiredContext(t *testing.T) context.Context {
	ctx, cancel := budget.Start(context.Background(), -time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// The idempotency key of the context is the message id of every attempt;
// a message id the caller set is kept, and none is made up without a key.
func TestPublishSendsTheIdempotencyKeyAsMessageID(t *testing.T) {
	t.Parallel()
	var got []string
	ch := channelFunc(func(_ context.Context, msg amqp.Publishing) error {
		got = append(got, msg.MessageId)
		return nil
	})
	ctx := budget.WithIdempotencyKey(context.Background())
	key, _ := budget.IdempotencyKeyFrom(ctx)
	for range 2 {
		if err := amqpbudget.Publish(ctx, ch, "", "q", false, false, amqp.Publishing{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := amqpbudget.Publish(ctx, ch, "", "q", false, false, amqp.Publishing{MessageId: "order-42"}); err != nil {
		t.Fatal(err)
	}
	if err := amqpbudget.Publish(context.Background(), ch, "", "q", false, false, amqp.Publishing{}); err != nil {
		t.Fatal(err)
	}
	want := []string{key, key, "order-42", ""}
	if len(got) != len(want) {
		t.Fatalf("message ids %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message ids %q, want %q", got, want)
			break
		}
	}
}
