package httpbudget

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/timebudget/budget/edge/pick"
)

// The table of the Picker's doc, row by row.
func TestPickerResultOf(t *testing.T) {
	refused := errors.New("connection refused")
	for _, c := range []struct {
		code   int
		err    error
		cutOff bool
		want   pick.Result
	}{
		{200, nil, false, pick.OK},
		{204, nil, false, pick.OK},
		{304, nil, false, pick.OK},
		{429, nil, false, pick.Failed},
		{500, nil, false, pick.Failed},
		{502, nil, false, pick.Failed},
		{503, nil, false, pick.Failed},
		{504, nil, false, pick.Failed},
		{504, nil, true, pick.Expired},
		{408, nil, false, pick.Failed},
		{408, nil, true, pick.Expired},
		{501, nil, false, pick.Answered},
		{404, nil, false, pick.Answered},
		{400, nil, false, pick.Answered},
		{403, nil, false, pick.Answered},
		{0, context.DeadlineExceeded, true, pick.Expired},
		{0, context.DeadlineExceeded, false, pick.Failed},
		{0, fmt.Errorf("get: %w", context.Canceled), false, pick.Canceled},
		{0, refused, false, pick.Failed},
		{0, refused, true, pick.Expired},
	} {
		if got := resultOf(c.code, c.err, c.cutOff); got != c.want {
			t.Errorf("resultOf(%d, %v, cut off %v) = %v, want %v", c.code, c.err, c.cutOff, got, c.want)
		}
	}
}
