package connectbudget

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestStreamErrors pins what the errors of the two stream limits say and
// match: the idle timeout's names the side that went quiet and matches
// ErrIdle; the per-message budget's names the operation and does not.
func TestStreamErrors(t *testing.T) {
	idle := error(&idleError{stage: "/acme.v1.Chat/Talk", quiet: "server", d: 300 * time.Millisecond})
	send := error(&messageError{stage: "/acme.v1.Chat/Talk", what: "Send", d: time.Second})
	if got, want := idle.Error(), "connectbudget: /acme.v1.Chat/Talk: the server sent nothing for 300ms (idle timeout)"; got != want {
		t.Errorf("idle: %q, want %q", got, want)
	}
	if got, want := send.Error(), "connectbudget: /acme.v1.Chat/Talk: Send took longer than the per-message budget of 1s"; got != want {
		t.Errorf("message: %q, want %q", got, want)
	}
	if !errors.Is(idle, ErrIdle) || !errors.Is(idle, context.DeadlineExceeded) {
		t.Error("the idle timeout's error matches neither ErrIdle nor context.DeadlineExceeded")
	}
	if errors.Is(send, ErrIdle) || !errors.Is(send, context.DeadlineExceeded) {
		t.Error("the per-message budget's error matches ErrIdle, or not context.DeadlineExceeded")
	}
	if errors.Is(idle, context.Canceled) || errors.Is(send, context.Canceled) {
		t.Error("a limit's error matches context.Canceled")
	}
}
