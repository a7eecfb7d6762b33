package report

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

// TestLedgerJSON pins report.json's form of a ledger: the ledger's own JSON
// and text, and not the events, budget and start the charts draw from,
// which the ledger's JSON holds already.
func TestLedgerJSON(t *testing.T) {
	t.Parallel()
	l := Ledger{Scenario: "geo", Request: 3, Label: "first", Ledger: json.RawMessage(`{}`), Text: "x",
		Events: []budget.Event{{Kind: budget.EventAttempt}}, Budget: time.Second, Start: time.Now()}
	raw, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(slices.Sorted(maps.Keys(m)), ","); got != "label,ledger,request,scenario,text" {
		t.Errorf("a ledger in report.json has keys %s", got)
	}
}
