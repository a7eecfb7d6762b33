package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimRecovery runs the command on the three-hop example with a fault
// that ends, and checks that the table, report.json and report.html give
// each pattern's recovery, the budget patterns' included.
func TestSimRecovery(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"sim", "internal/sim/testdata/chain3.yaml", "--requests", "40000",
		"--fault", "db=hang@2s-5s", "--out", dir}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	out := stdout.String()
	_, table, ok := strings.Cut(out, "recovery after the fault ends\n")
	if !ok {
		t.Fatalf("stdout has no recovery table:\n%s", out)
	}
	for _, name := range []string{"per-call timeouts", "shared deadline", "deadline + admission", "no timeout"} {
		if !strings.Contains(table, name+" ") || !strings.Contains(table, "db=hang@2s-5s") {
			t.Errorf("the recovery table has no row for %s:\n%s", name, table)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []struct {
			Pattern  string `json:"pattern"`
			Recovery []struct {
				Fault         string   `json:"fault"`
				Ended         bool     `json:"fault_ended"`
				FirstAnswerMs *float64 `json:"first_answer_ms"`
				FirstAnswer   string   `json:"first_answer"`
				RateMs        *float64 `json:"rate_90_ms"`
				Rate          string   `json:"rate_90"`
			} `json:"recovery"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	for _, res := range rep.Results {
		if len(res.Recovery) != 1 {
			t.Errorf("%s: %d recovery figures in report.json, want 1", res.Pattern, len(res.Recovery))
			continue
		}
		rc := res.Recovery[0]
		if rc.Fault != "db=hang@2s-5s" || !rc.Ended || (rc.FirstAnswerMs == nil) != (rc.FirstAnswer == "never") || (rc.RateMs == nil) != (rc.Rate == "never") {
			t.Errorf("%s: recovery %+v", res.Pattern, rc)
		}
		if !strings.Contains(table, rc.FirstAnswer) || !strings.Contains(table, rc.Rate) {
			t.Errorf("%s: the table does not say %s and %s:\n%s", res.Pattern, rc.FirstAnswer, rc.Rate, table)
		}
		// The shared deadline holds no estimate: it calls db again as soon
		// as the fault ends. Admission's ops, which refused db, api and
		// orders during the fault, let go within 1 s of its end too: their
		// probes cross the hops (with an op that held on, the edge answered
		// from its cache for 1.6 s after the fault).
		if (res.Pattern == "shared" || res.Pattern == "admission") && (rc.FirstAnswerMs == nil || rc.RateMs == nil || *rc.RateMs > 1000) {
			t.Errorf("%s: first answer %s, 90%% %s after the fault's end; want both within 1s", res.Pattern, rc.FirstAnswer, rc.Rate)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), `<tr data-pattern=`); n != 8 {
		t.Errorf("report.html has %d pattern rows, want 4 in the results and 4 in the recovery table", n)
	}
}
