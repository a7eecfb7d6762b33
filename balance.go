package budget

// The kinds of event a balancer records when it takes a replica out of the
// set it chooses from and puts it back. They are numbered after the kinds of
// event.go so that adding them changes no existing value.
const (
	// EventEject records that a balancer stopped choosing a replica because
	// its latency or its failures made it much worse than the others; it
	// then sends the replica only probes. Stage names the replica, Needed
	// is its latency estimate when it was ejected, Remaining is the time
	// left to the call whose choice noticed it.
	EventEject EventKind = EventMalformed + 1 + iota
	// EventRecover records that probes showed an ejected replica answering
	// like the others again, so the balancer chooses it again. Stage and
	// Needed are as for EventEject; Duration is how long it was ejected.
	EventRecover
)
