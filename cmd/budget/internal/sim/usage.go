package sim

// Usage is what budget sim --help prints.
const Usage = `Usage: budget sim [flags] FILE

Simulates the call graph declared in FILE (the format of budget audit) in
virtual time, with the same traffic and faults under four patterns:

	per-call timeouts     each attempt its call's configured timeout, fresh at
	                      each hop; retries with backoff; nothing handed down
	shared deadline       one deadline from the entry's budget; each attempt
	                      gets min(timeout, time left) and the callee stops at it
	deadline + admission  the same, and an attempt is refused before it starts
	                      by the caller's budget.Op for the callee (the
	                      library's own admission, on virtual time); fallbacks
	                      keep their time
	no timeout            none; the user gives up at 3× the budget

Each service takes a worker from its pool (workers in FILE, default 200) for
its whole request, does its own work (log-normal, fitted to its p50 and p99;
no latency means none) and makes its calls in order. A service whose work
does not stop when its caller leaves (cancellable: false, the default) runs
on, holding its worker, until it ends or a deadline handed to it passes.

It prints a table and writes report.json and report.html (charts inline) to
--out. The run is deterministic given --seed.

For a fault that ends, the report says how soon each pattern recovered. An
answer is a call to the faulty service that succeeded while every caller up
to the user still waited for it. "first answer" is the time from the
fault's end to the first answer at or after it; "90% of the rate before" is
the time from the fault's end to the end of the first window
[END + k·w, END + (k+1)·w) holding at least 90% of the answers per second
seen from the run's start to START, w being 100ms, or the time 20 answers
took before the fault when that is longer. Only windows that end before the
last request is sent count. "never" means not within the run (the run lasts
as long as --requests take); "n/a", that no answer came before the fault.

Flags:

	--requests N       requests per pattern (default 100000)
	--rate R           send R requests per second of virtual time, an open
	                   loop that can overload the services
	--concurrency C    or keep C users in a closed loop, each sending its next
	                   request when the last ended (default 100)
	--seed N           seed of the random draws (default 1)
	--workers N        pool size of services that declare none (default 200)
	--fault SVC=KIND[:K/N][@START[-END]]
	                   inject a fault, repeatable; KIND is hang,
	                   slow:DURATION, error (each call fails at once) or
	                   fail:P (each call fails at once with probability P);
	                   :K/N makes only K of every N calls faulty (not with
	                   fail:P); @START-END makes the fault start START into
	                   the run and end at END (@START: to the end of the
	                   run). For example db=hang@2s-5s, db=slow:200ms@2s-5s,
	                   db=error@2s-5s, db=hang:1/3@2s-5s. A call that starts
	                   while the fault is on is faulty; one it hangs is
	                   released when it ends
	--horizon D        with a fault that ends, every pattern sends requests
	                   until it has sent --requests and until D past the
	                   fault's end (default 10s), so that a fast pattern is
	                   seen as long after the fault as a slow one
	--out DIR          where to write the reports (default out)
	--max-calls N      the most calls the run may make (default 5000000000):
	                   before it starts, sim estimates 4 patterns × requests ×
	                   the calls one request can make, every retry and
	                   fallback counted as if each attempt failed, and refuses
	                   a run estimated past N

FILE is read within the bounds budget audit --help lists.

Exit status: 0 on success, 1 when the reports cannot be written, 2 for bad
flags, a malformed FILE (reported as FILE:LINE:COL: message) or a run
estimated past --max-calls.
`
