// Package budgettest helps test code that spends a budget: a fake dependency
// that can be slow, hang or fail, or hand its work to an engine that goes on
// after its caller has left (Detached, stopped only by a deadline handed over
// with the work), and a probe that measures orphaned work, the work that goes
// on after its caller has given up. The project's own demo and comparison
// use the same fake.
//
// The question a deadline system must answer is not "did the caller get its
// answer in time" alone, but "did the work stop when nobody was waiting any
// more". A [Probe] measures the second from the work's side: for each piece
// of work it records when the caller gave up (the work's context was done,
// which is also what a closed client connection looks like to a net/http or
// gRPC handler) and when the work actually stopped, so a test can assert
// "work stops within 5 ms of the deadline" from measurements rather than from
// a sleep and a guess:
//
//	probe := new(budgettest.Probe)
//	dep := &budgettest.Dependency{Hang: true, Probe: probe}
//	// ... run requests whose handlers call dep.Call(ctx) ...
//	probe.Wait(ctx)
//	if p99 := budgettest.Quantile(probe.Orphaned(), 0.99); p99 > 5*time.Millisecond {
//		t.Errorf("work went on %v after its caller gave up (p99)", p99)
//	}
//
// The package depends only on the standard library.
package budgettest
