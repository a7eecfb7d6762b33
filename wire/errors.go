package wire

import (
	"context"
	"errors"
	"strconv"
)

// ErrMalformed is matched, with [errors.Is], by every error reporting a header value that
// does not follow its grammar. The concrete error is a [*ParseError].
var ErrMalformed = errors.New("wire: malformed budget header")

// ErrShed is returned by [Policy.Decide] when a request arrives with less time left than
// the policy's minimum, or with no time left once the reserve is set aside. It is a
// predicted shortfall, not an expiry, so it deliberately does not match
// [context.DeadlineExceeded]: the work was refused before it started.
var ErrShed = errors.New("wire: request shed on arrival: too little time left")

// ErrExpired is returned by [Policy.Decide] when the caller's deadline had already passed
// when the request arrived. It matches [context.DeadlineExceeded] with [errors.Is],
// because that is what happened: the caller stopped waiting.
var ErrExpired error = expiredError{}

type expiredError struct{}

func (expiredError) Error() string { return "wire: deadline passed before the request arrived" }

// Is makes ErrExpired match context.DeadlineExceeded.
func (expiredError) Is(target error) bool { return target == context.DeadlineExceeded }

// Timeout reports true, as context.DeadlineExceeded does, for code that tests net.Error.
func (expiredError) Timeout() bool { return true }

// ParseError describes a malformed header value. It matches [ErrMalformed] with
// [errors.Is]. Building one allocates, which happens only on the malformed path.
type ParseError struct {
	// Header is the header's name, spelled as in this package's constants.
	Header string
	// Value is a copy of the offending value, cut to its first 32 bytes so that an
	// oversized header does not end up whole in logs. Error quotes it, so control
	// characters in it cannot forge log lines.
	Value string
	// Reason says what was wrong, for example "not an ASCII digit".
	Reason string
}

// Error returns a one-line description naming the header and the problem; a nil
// *ParseError returns the text of [ErrMalformed].
func (e *ParseError) Error() string {
	if e == nil {
		return ErrMalformed.Error()
	}
	return "wire: malformed " + e.Header + " " + strconv.Quote(e.Value) + ": " + e.Reason
}

// Unwrap returns [ErrMalformed].
func (e *ParseError) Unwrap() error { return ErrMalformed }

// maxQuoted bounds ParseError.Value.
const maxQuoted = 32

func newParseError(header, value string, r reason) *ParseError {
	return textParseError(header, value, r.String())
}

// textParseError is newParseError with the reason as text, for the parsers whose
// reasons are not in the reason table.
func textParseError(header, value, why string) *ParseError {
	if len(value) > maxQuoted {
		value = value[:maxQuoted]
	}
	// Clone so that a 32-byte excerpt does not keep a megabyte header alive.
	return &ParseError{Header: header, Value: string([]byte(value)), Reason: why}
}

// reason is why a value is malformed; reasonNone means it is not. Parsers return it
// instead of an error so that the lenient path, which only counts, never allocates.
type reason uint8

const (
	reasonNone reason = iota
	reasonNoDigits
	reasonTooLong
	reasonNotDigit
	reasonNoUnit
	reasonBadUnit
	reasonNotPair
	reasonTooMany
	reasonNotToken
	reasonZeroAttempt
	reasonNotCriticality
	reasonZeroBudget
	reasonNotProbe
)

var reasonText = [...]string{
	reasonNone:           "",
	reasonNoDigits:       "no digits",
	reasonTooLong:        "longer than the header allows",
	reasonNotDigit:       "not an ASCII digit",
	reasonNoUnit:         "missing unit",
	reasonBadUnit:        "unknown unit",
	reasonNotPair:        "not two numbers separated by one space",
	reasonTooMany:        "too many values",
	reasonNotToken:       "not 1 to 128 visible ASCII characters",
	reasonZeroAttempt:    "attempts count from 1",
	reasonNotCriticality: `not "critical", "default" or "sheddable"`,
	reasonZeroBudget:     "zero: a per-message budget is at least 1 ms",
	reasonNotProbe:       `not "1" or "0"`,
}

func (r reason) String() string { return reasonText[r] }
