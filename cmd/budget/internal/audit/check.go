package audit

import (
	"fmt"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// checkService checks the calls of s, which is given the time given, and
// returns how long they can take together in the worst case.
func (a *auditor) checkService(s *topology.Service, given time.Duration, entry bool) time.Duration {
	var total time.Duration
	for _, c := range s.Calls {
		total = satAdd(total, a.worstCall(c, given))
	}
	var before time.Duration
	for _, c := range s.Calls {
		worst := a.worstCall(c, given)
		reported := a.checkCall(s.Name, c.To, c.Timeout, c.Retries, c.Backoff, given, before, entry, c.Pos)
		for _, f := range c.Fallback {
			if f.To != "" {
				reported = a.checkCall(s.Name, f.To, f.Timeout, 0, 0, given, before, entry, f.Pos) || reported
			}
		}
		if !reported && before+worst >= given && before < given {
			a.sequence(s.Name, c, worst, before, total, given, entry)
		}
		before = satAdd(before, worst)
	}
	return before
}

// checkCall checks one call (or fallback call) on its own and reports
// whether it found a problem of its timing.
func (a *auditor) checkCall(caller, callee string, timeout time.Duration, retries int, backoff, given, before time.Duration, entry bool, pos topology.Pos) bool {
	tail := a.typicalTail(callee)
	add := func(kind Kind, msg, sugg string, t time.Duration) {
		a.findings = append(a.findings, Finding{Caller: caller, Callee: callee, Kind: kind, Message: msg,
			Suggestion: sugg, SuggestedTimeoutMs: t.Milliseconds(), Line: pos.Line, Col: pos.Col})
	}
	givenTo := fmt.Sprintf("the %s %s is given", ms(given), caller)
	if entry {
		givenTo = fmt.Sprintf("the %s budget", ms(given))
	}
	if timeout == 0 {
		largest := largestTimeout(given-before, retries, backoff)
		t := largest
		why := "the largest that fits " + givenTo
		if before > 0 {
			why += " after the calls before it"
		}
		if tail > 0 && satMul(3, tail) <= largest {
			t, why = 3*tail, fmt.Sprintf("3× %s's p99 of %s", callee, ms(tail))
		}
		if t <= 0 {
			add(NoTimeout, "no timeout: a slow "+callee+" holds "+caller+" for as long as it takes",
				"a timeout and less time for the calls before it: "+ms(before)+" of "+ms(given)+" is already spent", 0)
		} else {
			add(NoTimeout, "no timeout: a slow "+callee+" holds "+caller+" for as long as it takes",
				fmt.Sprintf("timeout %s (%s)", ms(t), why), t)
		}
		return true
	}
	reported := false
	need := timeout + time.Duration(retries)*(timeout+backoff)
	if need >= given {
		kind := Inverted
		msg := fmt.Sprintf("%s, not less than %s, so %s gives up while %s may still answer",
			takes(timeout, retries, backoff), givenTo, caller, callee)
		if entry {
			kind = OverBudget
			msg = fmt.Sprintf("%s, not less than %s, so the user gives up first", takes(timeout, retries, backoff), givenTo)
		}
		if t := largestTimeout(given, retries, backoff); t > 0 {
			add(kind, msg, fmt.Sprintf("timeout %s (the largest that fits %s%s)", ms(t), givenTo, retryText(retries, backoff)), t)
		} else {
			t = largestTimeout(given, 0, 0)
			add(kind, msg, fmt.Sprintf("retries 0 and timeout %s (no retry fits %s)", ms(t), givenTo), t)
		}
		reported = true
	}
	if tail > 0 && timeout < tail {
		// The parser bounds tail (MaxSum), so 2× fits; the retries may not.
		lo := 2 * tail
		fit := satAdd(satAdd(lo, satMul(int64(retries), satAdd(lo, backoff))), time.Millisecond)
		sugg := fmt.Sprintf("timeout %s (2× p99)", ms(lo))
		if fit > given {
			sugg += fmt.Sprintf(", which needs %s given %s; or make %s faster", ms(fit), caller, callee)
		}
		add(BelowP99, fmt.Sprintf("%s timeout is below %s's p99 of %s (its own and its callees'), so more than 1%% of calls time out by design",
			ms(timeout), callee, ms(tail)), sugg, lo)
	}
	return reported
}

func (a *auditor) sequence(caller string, c topology.Call, worst, before, total, given time.Duration, entry bool) {
	kind, whose := Sequence, fmt.Sprintf("the %s %s is given", ms(given), caller)
	if entry {
		kind, whose = OverBudget, fmt.Sprintf("the %s budget", ms(given))
	}
	msg := fmt.Sprintf("the calls of %s up to this one can take %s in the worst case (%s before it, %s for it", caller, ms(before+worst), ms(before), ms(worst))
	if len(c.Fallback) > 0 {
		msg += " with its fallbacks"
	}
	msg += "), not less than " + whose
	// Scale every call of the caller by the same factor, so that all of
	// them fit; suggesting only what is left for this call would leave
	// nothing for the calls after it.
	scale := float64(given-time.Millisecond) / float64(total)
	t := time.Duration(float64(effective(c.Timeout, given)) * scale).Truncate(time.Millisecond)
	sugg := fmt.Sprintf("timeout %s, with every call of %s scaled by the same %.2f (%s of calls into %s)", ms(t), caller, scale, ms(total), ms(given))
	if t <= 0 {
		sugg, t = "fewer calls, retries or fallbacks on this path", 0
	}
	a.findings = append(a.findings, Finding{Caller: caller, Callee: c.To, Kind: kind, Message: msg,
		Suggestion: sugg, SuggestedTimeoutMs: t.Milliseconds(), Line: c.Pos.Line, Col: c.Pos.Col})
}

func effective(timeout, given time.Duration) time.Duration {
	if timeout == 0 {
		return given
	}
	return timeout
}

// takes describes how long a call's attempts can take.
func takes(timeout time.Duration, retries int, backoff time.Duration) string {
	if retries == 0 {
		return ms(timeout) + " timeout"
	}
	need := timeout + time.Duration(retries)*(timeout+backoff)
	return fmt.Sprintf("%s timeout%s can take %s", ms(timeout), retryText(retries, backoff), ms(need))
}

func retryText(retries int, backoff time.Duration) string {
	if retries == 0 {
		return ""
	}
	s := fmt.Sprintf(" with %d %s", retries, plural(retries, "retry", "retries"))
	if backoff > 0 {
		s += " and " + ms(backoff) + " backoff"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
