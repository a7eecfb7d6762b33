package wire

// The Budget-Expired response header names the stage that refused a request because its
// budget was spent. Its value is one token of visible ASCII, so that a stage name chosen
// in code can never smuggle a line break or a second header into a response.

const maxStageLen = 128

// AppendBudgetExpired appends the [HeaderBudgetExpired] value naming stage to dst and
// returns the extended slice. Bytes outside visible ASCII (space, controls, non-ASCII)
// become '_', the value is cut to 128 bytes, and an empty stage is written as "unknown",
// so the result always parses. It does not allocate when dst has room, and is safe for
// concurrent use.
func AppendBudgetExpired(dst []byte, stage string) []byte {
	if stage == "" {
		stage = "unknown"
	}
	if len(stage) > maxStageLen {
		stage = stage[:maxStageLen]
	}
	for i := 0; i < len(stage); i++ {
		c := stage[i]
		if !visible(c) {
			c = '_'
		}
		dst = append(dst, c)
	}
	return dst
}

// FormatBudgetExpired is like [AppendBudgetExpired] but returns a string. It does not
// allocate when stage is already a valid value.
func FormatBudgetExpired(stage string) string {
	if validStage(stage) {
		return stage
	}
	return string(AppendBudgetExpired(nil, stage))
}

// ParseBudgetExpired parses a [HeaderBudgetExpired] value: 1 to 128 bytes of visible
// ASCII (0x21 to 0x7E). It returns ok false and a nil error when v is empty, the stage
// and ok true when v is valid, and a [*ParseError] matching [ErrMalformed] otherwise. A
// client deciding whether to retry should test whether the header is present, not
// whether it parses: any value means the budget is gone. It does not allocate unless v
// is malformed, and is safe for concurrent use.
func ParseBudgetExpired(v string) (stage string, ok bool, err error) {
	if v == "" {
		return "", false, nil
	}
	if !validStage(v) {
		return "", false, newParseError(HeaderBudgetExpired, v, reasonNotToken)
	}
	return v, true, nil
}

// validStage reports whether v is 1 to 128 bytes of visible ASCII.
func validStage(v string) bool {
	if len(v) == 0 || len(v) > maxStageLen {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !visible(v[i]) {
			return false
		}
	}
	return true
}

func visible(c byte) bool { return c >= 0x21 && c <= 0x7e }
