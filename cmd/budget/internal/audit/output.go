package audit

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteText writes one line per finding: caller -> callee: what is wrong;
// suggested value.
func (r *Report) WriteText(w io.Writer) error {
	for _, f := range r.Findings {
		if _, err := fmt.Fprintln(w, f.String()); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes the report as indented JSON. The field names are stable.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Summary says in one line how many calls were checked and how many
// findings there are.
func (r *Report) Summary() string {
	s := fmt.Sprintf("%d %s checked, worst case at %s %dms of a %dms budget", r.CallsChecked,
		plural(r.CallsChecked, "call", "calls"), r.Entry, r.WorstCaseMs, r.BudgetMs)
	switch n := len(r.Findings); n {
	case 0:
		s += ": no findings"
	default:
		s += fmt.Sprintf(": %d %s", n, plural(n, "finding", "findings"))
	}
	if len(r.Unreachable) > 0 {
		s += fmt.Sprintf(" (not reached from %s, not checked: %v)", r.Entry, r.Unreachable)
	}
	return s
}
