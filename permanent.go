package budget

import "errors"

// Permanent returns err marked as not worth retrying: a [Retry] returns it
// at once instead of making another attempt. Use it for answers a retry
// cannot change (a 4xx response, a validation failure) and for responses
// from a server that says the budget is gone. The result's message is err's,
// and errors.Is and errors.As reach err. A nil err returns nil. It costs one
// allocation.
//
// Error types of other packages can say the same without wrapping by
// implementing a method Permanent() bool that returns true.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() error   { return e.err }
func (e *permanentError) Permanent() bool { return true }

// IsPermanent reports whether err, or any error in its chain, was marked with
// [Permanent] or has a Permanent method that returns true.
func IsPermanent(err error) bool {
	var p interface{ Permanent() bool }
	return err != nil && errors.As(err, &p) && p.Permanent()
}
