package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/overload"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
)

func TestDemoHelpExplainsEveryFlag(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--budget", "--requests", "--concurrency", "--fault", "--scenario", "--out"} {
		if !strings.Contains(Usage, flag+" ") {
			t.Errorf("demo usage does not explain %s", flag)
		}
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := ParseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Budget != 300*time.Millisecond || cfg.Out != "out" || len(cfg.Scenarios) != 3 {
		t.Errorf("defaults: budget %s, out %q, scenarios %v", cfg.Budget, cfg.Out, cfg.Scenarios)
	}
	if f := scenario.FormatFaults(cfg.Faults); f != DefaultFault {
		t.Errorf("default faults %s, want %s", f, DefaultFault)
	}
}

// TestHelpSaysTheOverloadCaseAsItRuns checks that --help describes the
// overload case with the times the run uses and prints.
func TestHelpSaysTheOverloadCaseAsItRuns(t *testing.T) {
	t.Parallel()
	o := overload.Default()
	help := strings.Join(strings.Fields(Usage), " ")
	for _, want := range []string{
		"half its full-size times", o.Fast.String() + " to " + o.Slow.String(), "waits " + o.Budget.String(),
	} {
		if !strings.Contains(help, want) {
			t.Errorf("--help does not say %q", want)
		}
	}
	if o.Scale != 0.5 {
		t.Errorf("the overload case runs at %v× but --help says half", o.Scale)
	}
}
