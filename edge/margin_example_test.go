package edge_test

import (
	"fmt"
	"time"

	"github.com/timebudget/budget/edge"
)

// A server adapter keeps one MarginKeeper and hands it to its Arrival; an
// answer written after its handler's deadline teaches it how late answers
// leave.
func ExampleMarginKeeper() {
	k := edge.NewMarginKeeper(0) // adaptive
	fmt.Println(k.For(time.Second))
	for range 20 {
		k.Observe(2 * time.Millisecond)
	}
	fmt.Println(k.For(time.Second), k.For(20*time.Millisecond))
	_ = edge.Arrival{Adapter: "myproto", Margin: k}
	// Output:
	// 1ms
	// 8.974624ms 2ms
}
