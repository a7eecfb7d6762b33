package topology

import (
	"errors"
	"unicode/utf8"
)

// checkName accepts a name of a service or a local rung. Names reach
// terminals, CI logs and HTML reports as they are, so besides the
// characters that break the output's own syntax ('=', ',', spaces) it
// refuses every character that can change how the rest of a line looks:
// C0 and C1 controls (escape sequences, carriage return, U+0085 NEXT LINE)
// and the bidirectional formatting characters, with which a name could
// show another name, or reverse the text after it (U+202E).
func checkName(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if len(s) > 200 {
		return errors.New("longer than 200 bytes")
	}
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			return errors.New("not valid UTF-8")
		case r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return errors.New("may not contain spaces or control characters")
		case isBidi(r):
			return errors.New("may not contain bidirectional formatting characters")
		case r == '=' || r == ',':
			return errors.New("may not contain '=' or ','")
		}
	}
	return nil
}

// isBidi reports whether r is one of Unicode's bidirectional formatting
// characters: the marks LRM, RLM and ALM, the embeddings and overrides
// (U+202A–U+202E) and the isolates (U+2066–U+2069).
func isBidi(r rune) bool {
	return r == 0x200e || r == 0x200f || r == 0x061c ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
