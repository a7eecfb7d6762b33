package audit

import (
	"fmt"
	"time"
)

// checkService checks the calls of name, which is given the time given,
// by the rule of the package doc. It returns each call's timeout once the
// suggestions are applied (0 for a call left without one) and how long the
// calls can take together in the worst case as configured.
func (a *auditor) checkService(name string, given time.Duration, entry bool) ([]time.Duration, time.Duration) {
	items := a.items[name]
	cur := make([]time.Duration, len(items))
	floors := make([]time.Duration, len(items))
	prefs := make([]time.Duration, len(items))
	ok := make([]bool, len(items))
	local := a.local[name]
	worst, floorSum := local, local
	allOK := true
	for i, it := range items {
		cur[i] = it.timeout
		floors[i], prefs[i] = a.bounds(it.to)
		if it.budget {
			// It ends at its caller's deadline, so it never holds the
			// caller longer than the caller is given; what it needs is
			// its floor, which the sums below must leave it.
			prefs[i], ok[i] = floors[i], true
			worst = satAdd(worst, it.worst(floors[i]))
			floorSum = satAdd(floorSum, it.worst(floors[i]))
			continue
		}
		// A preference larger than the time the caller is given is
		// clamped to it; "never" is all of it.
		prefs[i] = max(floors[i], min(prefs[i], given.Truncate(time.Millisecond)))
		ok[i] = it.timeout > 0 && it.timeout >= floors[i]
		allOK = allOK && ok[i]
		worst = satAdd(worst, it.worst(effective(it.timeout, given)))
		floorSum = satAdd(floorSum, it.worst(floors[i]))
	}
	if allOK && worst < given {
		return cur, worst
	}
	if floorSum >= given {
		a.conflict(name, items, floors, local, floorSum, given, entry)
		return cur, worst
	}
	// Each failing call at its preference, the others as they are.
	next := make([]time.Duration, len(items))
	sum := local
	for i, it := range items {
		next[i] = cur[i]
		if !ok[i] {
			next[i] = prefs[i]
		}
		if it.budget {
			sum = satAdd(sum, it.worst(floors[i]))
			continue
		}
		sum = satAdd(sum, it.worst(next[i]))
	}
	if sum >= given {
		// Every call the same fraction of the way from its floor to its
		// preference, in whole milliseconds rounded down: the sum of
		// attempts × (timeout - floor) stays within room.
		room := int64((given - 1 - floorSum) / time.Millisecond)
		var weight int64
		for i, it := range items {
			weight += it.attempts() * int64((prefs[i]-floors[i])/time.Millisecond)
		}
		for i := range items {
			if items[i].budget {
				continue // no timeout of its own to suggest
			}
			span := int64((prefs[i] - floors[i]) / time.Millisecond)
			if room < weight {
				span = room * span / weight
			}
			next[i] = floors[i] + time.Duration(span)*time.Millisecond
		}
	}
	for i, it := range items {
		if next[i] != cur[i] {
			a.report(name, it, cur[i], next[i], floors[i], prefs[i], worst, given, entry)
		}
	}
	return next, worst
}

// report adds the finding of one call whose timeout the rule changes from
// cur to next.
//
// pref is the call's preference clamped to what the caller is given.
func (a *auditor) report(caller string, it item, cur, next, floor, pref, worst, given time.Duration, entry bool) {
	callee := it.to
	givenTo := a.givenText(caller, given, entry)
	var kind Kind
	var msg string
	tail := a.typicalTail(callee)
	switch {
	case cur == 0:
		kind, msg = NoTimeout, "no timeout: a slow "+callee+" holds "+caller+" for as long as it takes"
	case it.worst(cur) >= given:
		kind = Inverted
		msg = fmt.Sprintf("%s, not less than %s, so %s gives up while %s may still answer",
			takes(cur, it.retries, it.backoff), givenTo, caller, callee)
		if entry {
			kind = OverBudget
			msg = fmt.Sprintf("%s, not less than %s, so the user gives up first", takes(cur, it.retries, it.backoff), givenTo)
		}
	case cur < floor && floor == ceilMs(tail):
		kind = BelowP99
		msg = fmt.Sprintf("%s timeout is below %s's p99 of %s (its own and its callees'), so more than 1%% of calls time out by design",
			ms(cur), callee, ms(tail))
	case cur < floor:
		kind = BelowP99
		msg = fmt.Sprintf("%s timeout is below the %s %s's own calls need one after another at their callees' p99s, retries counted, so more than 1%% of calls time out by design",
			ms(cur), ms(floor), callee)
	default:
		kind = Sequence
		if entry {
			kind = OverBudget
		}
		what := "this call"
		if it.fallback {
			what = "this fallback"
		}
		msg = fmt.Sprintf("the calls of %s one after another can take %s in the worst case (%s for %s), not less than %s",
			caller, ms(worst), ms(it.worst(effective(cur, given))), what, givenTo)
	}
	var why string
	_, unclamped := a.bounds(callee)
	switch {
	case next == floor && next < pref:
		why = fmt.Sprintf("%s's floor: with %s's other calls nothing more fits %s", callee, caller, givenTo)
	case next < pref:
		why = fmt.Sprintf("from %s's floor of %s toward its preference, as far as %s's calls all fit %s", callee, ms(floor), caller, givenTo)
	case unclamped == never:
		why = fmt.Sprintf("all of %s: nothing is measured for %s", givenTo, callee)
	case next < unclamped:
		why = fmt.Sprintf("all of %s, less than 2× %s's p99", givenTo, callee)
	case next == ceilMs(2*tail):
		why = fmt.Sprintf("2× %s's p99 of %s", callee, ms(tail))
	default:
		why = fmt.Sprintf("what %s's own calls take at 2× their callees' p99s, retries counted", callee)
	}
	a.findings = append(a.findings, Finding{Caller: caller, Callee: callee, Kind: kind, Message: msg,
		Suggestion: fmt.Sprintf("timeout %s (%s)", ms(next), why), SuggestedTimeoutMs: next.Milliseconds(),
		Line: it.pos.Line, Col: it.pos.Col})
}

// conflict reports, once, a service whose calls at their floors do not fit
// the time it is given, on the call where their sum passes it.
func (a *auditor) conflict(caller string, items []item, floors []time.Duration, local, floorSum, given time.Duration, entry bool) {
	givenTo := a.givenText(caller, given, entry)
	more := "more time for " + caller
	if entry {
		more = "a larger budget"
	}
	at := items[len(items)-1]
	sum := local
	for i, it := range items {
		if sum = satAdd(sum, it.worst(floors[i])); sum >= given {
			at = it
			break
		}
	}
	msg := fmt.Sprintf("the calls of %s one after another need %s at their floors (each callee's p99 with its callees', retries, backoff and fallbacks counted), not less than %s, so no timeouts fit both",
		caller, ms(floorSum), givenTo)
	if at.budget {
		msg = fmt.Sprintf("timeout: budget gives %s the rest of %s, but the calls of %s one after another need %s at their floors (each callee's p99 with its callees', retries, backoff and fallbacks counted), so the budget cannot cover it",
			at.to, givenTo, caller, ms(floorSum))
	}
	a.findings = append(a.findings, Finding{Caller: caller, Callee: at.to, Kind: Conflict,
		Message:    msg,
		Suggestion: more + ", fewer calls or retries, or faster callees",
		Line:       at.pos.Line, Col: at.pos.Col})
}

// givenText names the time caller is given: the budget for the entry, or
// the time it is given once the suggestions are applied, with the time it
// is given now when that differs.
func (a *auditor) givenText(caller string, given time.Duration, entry bool) string {
	switch now := a.now[caller]; {
	case entry:
		return fmt.Sprintf("the %s budget", ms(given))
	case now != given:
		return fmt.Sprintf("the %s %s is given with the suggested timeouts (%s now)", ms(given), caller, ms(now))
	}
	return fmt.Sprintf("the %s %s is given", ms(given), caller)
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
