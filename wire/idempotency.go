package wire

// The Idempotency-Key request header names one logical call, so that a server can answer
// its retries with the first answer instead of running the work again (IETF draft "The
// Idempotency-Key HTTP Header Field", as Stripe and others use it). The draft writes the
// value as a Structured Field string ("key", in double quotes); many servers send and
// accept the bare key. Both are read here; this package writes the quoted form.

// HeaderIdempotencyKey is the request header carrying a call's idempotency key. Parse it
// with [ParseIdempotencyKey]; write it with [FormatIdempotencyKey].
const HeaderIdempotencyKey = "Idempotency-Key"

// MaxIdempotencyKey is the longest key, in bytes without the quotes, that
// [ParseIdempotencyKey] accepts: a server keeps every key it sees for a while, so a
// client must not be able to make it store a large one.
const MaxIdempotencyKey = 255

// ParseIdempotencyKey reads the [HeaderIdempotencyKey] values of one request, as
// net/http's Header holds them. It returns "" and false with a nil error when there is
// none; the key and true when there is exactly one valid value; and otherwise a
// [*ParseError] matching [ErrMalformed] whose Reason says what was wrong: empty, longer
// than [MaxIdempotencyKey] bytes, a control character or a byte outside ASCII, a quote
// that does not close or an escape inside one, a bare value holding a comma (a list, as
// a proxy joins repeated headers), or more than one value. A key is either a quoted
// string of printable ASCII (space included, neither '"' nor '\') or a bare token of
// visible ASCII. The returned key is without its quotes and shares memory with vals.
// It does not allocate unless the value is malformed, and is safe for concurrent use.
func ParseIdempotencyKey(vals []string) (key string, ok bool, err error) {
	switch {
	case len(vals) == 0:
		return "", false, nil
	case len(vals) > 1:
		return "", false, idempotencyError(vals[0], "sent more than once")
	}
	v := vals[0]
	quoted := len(v) >= 1 && v[0] == '"'
	k := v
	if quoted {
		if len(v) < 2 || v[len(v)-1] != '"' {
			return "", false, idempotencyError(v, "a quote that does not close")
		}
		k = v[1 : len(v)-1]
	}
	if why := checkKey(k, quoted); why != "" {
		return "", false, idempotencyError(v, why)
	}
	return k, true, nil
}

// checkKey returns why k is not a valid key, or "".
func checkKey(k string, quoted bool) string {
	switch {
	case k == "":
		return "empty"
	case len(k) > MaxIdempotencyKey:
		return "longer than 255 bytes"
	}
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c < 0x20 || c > 0x7e:
			return "a control character or a byte outside ASCII"
		case c == '"':
			return "a quote inside the key, or several quoted values"
		case c == '\\' && quoted:
			return "an escape inside the quotes, which is not accepted"
		case c == ' ' && !quoted:
			return "a space in a bare key"
		case c == ',' && !quoted:
			return "more than one value"
		}
	}
	return ""
}

// FormatIdempotencyKey returns the [HeaderIdempotencyKey] value for key, quoted as the
// draft writes it, and true; or "" and false when key would not parse (see
// [ParseIdempotencyKey]), so that a client never sends a key its server must refuse. It
// allocates the quoted string, and is safe for concurrent use.
func FormatIdempotencyKey(key string) (string, bool) {
	if checkKey(key, true) != "" {
		return "", false
	}
	return `"` + key + `"`, true
}

func idempotencyError(v, why string) *ParseError {
	return textParseError(HeaderIdempotencyKey, v, why)
}
