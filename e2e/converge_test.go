package e2e

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVanishedCellIsConvergedAway kills a cell outright (no drain): once its presence
// expires, convergence runs at once, marks its instances SUSPECT while replacements are
// placed on the other cells, and removes the suspects when the replacements run.
func TestVanishedCellIsConvergedAway(t *testing.T) {
	dataDir := t.TempDir()
	d := startDev(t, "--data-dir", dataDir, "--cell-executor", "sim", "--convergence-interval", "10s")
	lrp := demoLRP("web", 6)
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": lrp}, nil)
	d.waitFor(t, "6 RUNNING", 30*time.Second, func() bool { return runningIndices(d.instances("web")) == 6 })

	perCell := map[string]int{}
	for _, a := range d.instances("web") {
		perCell[a.CellID]++
	}
	victim := ""
	for id, n := range perCell {
		if victim == "" || n > perCell[victim] {
			victim = id
		}
	}
	out, err := exec.Command("pgrep", "-f", "cell --id "+victim+" .*"+dataDir).Output()
	if err != nil {
		t.Fatalf("find cell %s: %v", victim, err)
	}
	pid, _ := strconv.Atoi(strings.Fields(string(out))[0])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	sawSuspect := false
	d.waitFor(t, fmt.Sprintf("instances of the killed %s to run elsewhere", victim), 60*time.Second, func() bool {
		l := d.instances("web")
		for _, a := range l {
			if a.Presence == "SUSPECT" {
				sawSuspect = true
			}
			if a.CellID == victim || a.State != "RUNNING" {
				return false
			}
		}
		return len(l) == 6
	})
	if !sawSuspect {
		t.Log("the replacements ran before a SUSPECT record was sampled")
	}
}
