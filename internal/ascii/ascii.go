// Package ascii compares header words without regard to ASCII case, for the
// root module's parsers (budget.ParseCriticality and the wire package), so
// that every reader of a class name folds case by one rule.
package ascii

// EqualFoldLower reports whether s equals lower, a lower-case ASCII word,
// ignoring the case of ASCII letters only: no Unicode folding (the Kelvin
// sign is not a k). It does not allocate.
func EqualFoldLower(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != lower[i] {
			return false
		}
	}
	return true
}
