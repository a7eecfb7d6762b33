package pick_test

import (
	"context"
	"fmt"
	"time"

	"github.com/timebudget/budget/edge/pick"
)

// An adapter keeps one Replica per replica, asks the Balancer for each
// call, and reports how the call ended with the Result its protocol's
// answer means.
func Example() {
	b := pick.New(pick.Config{Stage: "myproto"})
	reps := []*pick.Replica{b.NewReplica("10.0.0.1:9000"), b.NewReplica("10.0.0.2:9000")}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	i, probe := b.Choose(ctx, start, reps)
	reps[i].Begin()
	// ... send the call to reps[i].Name() and wait for its answer ...
	end := start.Add(3 * time.Millisecond)
	deadline, has := ctx.Deadline()
	res := pick.OK // a success; a refusal that says the replica sheds is pick.Failed
	if false {     // the answer was "deadline exceeded"
		res = pick.Failed
		if pick.CutOff(start, end, deadline, has) {
			res = pick.Expired // cut off by the call's own deadline
		}
	}
	b.Done(reps[i], start, end, probe, res)
	fmt.Println(reps[i].Latency())
	// Output: 3ms
}
