package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"

	"github.com/timebudget/budget"
)

// MaxAnswer is the largest answer body (or marshalled reply) the protocol
// middleware keeps to replay, 1 MiB: a larger answer is stored with
// Replayable false, and repeats of its key are refused.
const MaxAnswer = 1 << 20

// MaxWait is the longest a repeat waits for its key's first request when
// it has no deadline of its own, as the protocol middleware passes it to
// [Once].
const MaxWait = 10 * time.Second

// Fingerprint returns the SHA-256 of parts, each preceded by its length, so
// that no two different lists of parts (such as a method name and a
// marshalled message) share a fingerprint by moving bytes from one part to
// the next. It is what the gRPC and Connect middleware bind a key to.
func Fingerprint(parts ...[]byte) [32]byte {
	d := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		d.Write(n[:])
		d.Write(p)
	}
	var fp [32]byte
	d.Sum(fp[:0])
	return fp
}

// Result says how [Once] answered a request carrying an idempotency key.
type Result uint8

// How [Once] answered. Each protocol's middleware maps them to its own
// answers (for HTTP, gRPC and Connect: the work's own answer, the replayed
// first answer, 422 / INVALID_ARGUMENT, 409 / ABORTED, 409 / ABORTED and
// 503 / UNAVAILABLE).
const (
	// Ran: the key was new, the work ran for this request, and its record
	// was stored for repeats.
	Ran Result = iota + 1
	// Replayed: the key's first request is done and its answer, in the
	// returned record, is to be sent again instead of running the work.
	Replayed
	// Mismatch: the key was first used with another request (another
	// fingerprint): the request is refused, never answered with the other
	// request's answer.
	Mismatch
	// Busy: the key's first request still ran when the wait ended (the
	// request's budget ran out, or it was canceled), or it vanished
	// meanwhile (it panicked, or the key expired): the request is refused
	// and may be tried again.
	Busy
	// NotReplayable: the first request is done but its answer could not be
	// kept whole (Record.Replayable is false): the request is refused.
	NotReplayable
	// StoreDown: the store failed (the error says how, [ErrStoreFull]
	// among others): the request is refused and the work does not run,
	// since running it could repeat work the store would have stopped.
	StoreDown
)

var resultNames = [...]string{Ran: "ran", Replayed: "replayed", Mismatch: "mismatch", Busy: "busy",
	NotReplayable: "not_replayable", StoreDown: "store_down"}

// String returns the lower-case name of r, such as "replayed", or "" for a
// value outside Ran to StoreDown.
func (r Result) String() string {
	if r >= Ran && r <= StoreDown {
		return resultNames[r]
	}
	return ""
}

// Once runs work at most once per key among the requests that share store,
// the part of an idempotency middleware that does not depend on the
// protocol. fp is the fingerprint of the request (a hash of what makes two
// requests the same one: for instance its method and body). maxWait bounds
// the wait for a first request that still runs when ctx has no deadline;
// with a deadline, the wait ends a millisecond before it, so that the
// request can still be answered.
//
// It reserves key in store. When the key is new, it runs work, completes
// the key with the record work returns (Fingerprint and Done set by Once;
// store a Replayable false record for an answer that cannot be kept whole)
// and returns that record and [Ran]. When work panics, the key is forgotten
// (Complete with nil) so that a repeat runs the work again, and the panic
// goes on. The key is completed with a context that is not canceled with
// ctx, so a caller that leaves does not leave it running.
//
// When the key is known, work does not run: a record with another
// fingerprint returns [Mismatch]; a first request that still runs is
// waited for (polling Get, from 1 ms up to 50 ms apart) within ctx's budget
// or maxWait, then [Busy] if it did not end; a done record returns
// [Replayed] with it, or [NotReplayable]. A read made while waiting that
// fails for want of the request's budget (an error matching
// context.DeadlineExceeded or [budget.ErrInsufficient], as a store that
// pushes the budget down to its database returns) is the budget running
// out: [Busy]. Any other store error, at any step, returns [StoreDown] with
// the error; it is the only case with a non-nil error, and so is a nil
// store or work.
func Once(ctx context.Context, store Store, key string, fp [32]byte, maxWait time.Duration,
	work func(ctx context.Context) Record) (Record, Result, error) {
	if store == nil || work == nil {
		return Record{}, StoreDown, errNilOnce
	}
	rec, mine, err := store.Reserve(ctx, key, fp)
	switch {
	case err != nil:
		return Record{}, StoreDown, err
	case mine:
		return run(ctx, store, key, fp, work), Ran, nil
	case rec.Fingerprint != fp:
		return Record{}, Mismatch, nil
	}
	if !rec.Done {
		var ok bool
		if rec, ok, err = wait(ctx, store, key, maxWait); err != nil {
			return Record{}, StoreDown, err
		} else if !ok {
			return Record{}, Busy, nil
		}
		if rec.Fingerprint != fp {
			return Record{}, Mismatch, nil // the key expired and was reused meanwhile
		}
	}
	if !rec.Replayable {
		return rec, NotReplayable, nil
	}
	return rec, Replayed, nil
}

// errNilOnce is what Once answers when called without a store or work.
var errNilOnce = errors.New("idempotency: Once needs a store and a function")

// run runs work for the request that reserved key, and completes the key
// with its record; or forgets the key when work panics.
func run(ctx context.Context, store Store, key string, fp [32]byte, work func(ctx context.Context) Record) Record {
	cctx := context.WithoutCancel(ctx) // complete the key even if the caller left
	done := false
	defer func() {
		if !done {
			_ = store.Complete(cctx, key, nil) // work panicked: let a repeat run it
		}
	}()
	rec := work(ctx)
	done = true
	rec.Fingerprint, rec.Done = fp, true
	if !rec.Replayable {
		rec.Body = nil
	}
	_ = store.Complete(cctx, key, &rec)
	return rec
}

// wait polls store until key's first request is done, and returns its
// record and true; or false when ctx's budget (less a moment to answer, or
// maxWait without a deadline) ran out first, ctx was canceled, or the key
// vanished (its first request panicked, or it expired).
func wait(ctx context.Context, store Store, key string, maxWait time.Duration) (Record, bool, error) {
	until := time.Now().Add(maxWait)
	if dl, ok := ctx.Deadline(); ok {
		until = dl.Add(-time.Millisecond)
	}
	pause := time.Millisecond
	for {
		left := time.Until(until)
		if left <= 0 {
			return Record{}, false, nil
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return Record{}, false, nil
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
		rec, ok, err := store.Get(ctx, key)
		if outOfTime(err) {
			// The store refused or stopped the read for want of the
			// request's budget (a database store pushes it down): that is
			// the budget running out, not the store being down.
			return Record{}, false, nil
		}
		if err != nil || !ok || rec.Done {
			return rec, ok, err
		}
	}
}

// outOfTime reports whether err says a store call ran out of the caller's
// budget: it matches context.DeadlineExceeded or [budget.ErrInsufficient].
func outOfTime(err error) bool {
	return err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, budget.ErrInsufficient))
}
