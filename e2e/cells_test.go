package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/freeport"
	"github.com/updatable-lrps/bbs/internal/testwait"
)

// devStack is `bbs dev` started for a test, with its API client.
type devStack struct {
	p                    *process
	api                  client
	pgPort, temporalPort int
	routerPort           int
	routerAdminPort      int
	sshPort              int
	dataDir              string
}

func startDev(t *testing.T, extra ...string) *devStack {
	t.Helper()
	bin := temporalBin(t)
	apiPort, pgPort, temporalPort := freeport.Port(t), freeport.Port(t), freeport.Port(t)
	dataDir := t.TempDir()
	args := append([]string{"dev", "--data-dir", dataDir, "--listen", fmt.Sprintf("127.0.0.1:%d", apiPort),
		"--bbs-listen", fmt.Sprintf("127.0.0.1:%d", freeport.Port(t)), "--bbs-tls-listen", fmt.Sprintf("127.0.0.1:%d", freeport.Port(t)),
		"--pg-port", fmt.Sprint(pgPort), "--temporal-bin", bin,
		"--temporal-port", fmt.Sprint(temporalPort), "--temporal-ui-port", fmt.Sprint(freeport.Port(t))}, extra...)
	routerPort, routerAdminPort, sshPort := freeport.Port(t), freeport.Port(t), freeport.Port(t)
	args = append(args, "--router-listen", fmt.Sprintf("127.0.0.1:%d", routerPort), "--router-admin-listen", fmt.Sprintf("127.0.0.1:%d", routerAdminPort),
		"--ssh-proxy-listen", fmt.Sprintf("127.0.0.1:%d", sshPort))
	d := &devStack{p: start(t, nil, args...), api: client{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", apiPort)},
		pgPort: pgPort, temporalPort: temporalPort, routerPort: routerPort, routerAdminPort: routerAdminPort, sshPort: sshPort, dataDir: dataDir}
	d.p.waitOutput(t, "Ctrl-C stops everything", 2*time.Minute)
	t.Cleanup(func() { d.p.cmd.Process.Signal(syscall.SIGINT); <-d.p.done })
	return d
}

type instance struct {
	Index        int32  `json:"index"`
	DefinitionID string `json:"definition_id"`
	State        string `json:"state"`
	Presence     string `json:"presence"`
	CellID       string `json:"cell_id"`
	InstanceGUID string `json:"instance_guid"`
	Address      string `json:"address"`
	Ports        []struct {
		ContainerPort uint32 `json:"container_port"`
		HostPort      uint32 `json:"host_port"`
	} `json:"ports"`
	CrashCount  int32  `json:"crash_count"`
	CrashReason string `json:"crash_reason"`
	Retiring    bool   `json:"retiring"`
}

func (d *devStack) instances(guid string) []instance {
	var resp struct {
		ActualLRPs []instance `json:"actual_lrps"`
	}
	d.api.mustPost("/v1/actual_lrps/list", obj{"process_guid": guid}, &resp)
	return resp.ActualLRPs
}

// runningIndices counts the indices served by a RUNNING instance of any presence.
func runningIndices(lrps []instance) int {
	seen := map[int32]bool{}
	for _, a := range lrps {
		if a.State == "RUNNING" {
			seen[a.Index] = true
		}
	}
	return len(seen)
}

func (d *devStack) waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	testwait.Until(t, within, 100*time.Millisecond, what, cond)
}

func demoLRP(guid string, instances int) obj {
	return obj{
		"process_guid": guid, "domain": "cf-apps", "instances": instances,
		"rootfs": "preloaded:cflinuxfs4", "memory_mb": 64, "disk_mb": 64, "ports": []int{8080},
		"env":              []obj{{"name": "DEMO_VERSION", "value": "v1"}},
		"routes":           obj{"cf-router": []obj{{"hostnames": []string{guid + ".example.com"}, "port": 8080}}},
		"action":           obj{"run": obj{"path": demoBin}},
		"check_definition": obj{"checks": []obj{{"http_check": obj{"port": 8080, "path": "/health"}}}},
	}
}

// TestCellsRunCrashAndEvacuate is the cells issue's check with real processes: instances of
// an HTTP app become RUNNING across cells and zones and answer on their ports; a killed
// instance crashes, restarts and runs again with crash_count 1; a draining cell's instances
// move without the number of running indices ever dropping below the desired count.
func TestCellsRunCrashAndEvacuate(t *testing.T) {
	d := startDev(t)
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("web", 4)}, nil)
	d.waitFor(t, "4 RUNNING instances", 30*time.Second, func() bool {
		l := d.instances("web")
		return len(l) == 4 && runningIndices(l) == 4
	})

	var cells []struct {
		CellID     string `json:"cell_id"`
		Zone       string `json:"zone"`
		RepAddress string `json:"rep_address"`
	}
	var resp struct {
		Cells json.RawMessage `json:"cells"`
	}
	d.api.mustPost("/v1/cells/list", nil, &resp)
	json.Unmarshal(resp.Cells, &cells)
	zoneOf := map[string]string{}
	repOf := map[string]string{}
	for _, c := range cells {
		zoneOf[c.CellID], repOf[c.CellID] = c.Zone, c.RepAddress
	}
	usedCells, usedZones := map[string]int{}, map[string]bool{}
	var victim instance
	victimPID := 0
	for _, a := range d.instances("web") {
		usedCells[a.CellID]++
		usedZones[zoneOf[a.CellID]] = true
		res, err := http.Get(fmt.Sprintf("http://%s:%d/", a.Address, a.Ports[0].HostPort))
		if err != nil {
			t.Fatalf("instance %d does not answer: %v", a.Index, err)
		}
		var who struct {
			Index string `json:"index"`
			PID   int    `json:"pid"`
		}
		json.NewDecoder(res.Body).Decode(&who)
		res.Body.Close()
		if who.Index != fmt.Sprint(a.Index) {
			t.Fatalf("instance %d answered as index %q", a.Index, who.Index)
		}
		if a.Index == 1 {
			victim, victimPID = a, who.PID
		}
	}
	if len(usedCells) < 3 || len(usedZones) != 2 {
		t.Fatalf("instances are not spread: cells %v, zones %v", usedCells, usedZones)
	}

	if err := syscall.Kill(victimPID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill index 1 (pid %d): %v", victimPID, err)
	}
	d.waitFor(t, "index 1 to crash and run again", 30*time.Second, func() bool {
		for _, a := range d.instances("web") {
			if a.Index == 1 && a.State == "RUNNING" && a.CrashCount == 1 && a.InstanceGUID != victim.InstanceGUID {
				if !strings.Contains(a.CrashReason, "killed") {
					t.Errorf("crash reason %q does not say it was killed", a.CrashReason)
				}
				return true
			}
		}
		return false
	})

	// Drain the busiest cell while sampling.
	busiest := ""
	for id, n := range usedCells {
		if busiest == "" || n > usedCells[busiest] {
			busiest = id
		}
	}
	res, err := http.Post(repOf[busiest]+"/v1/evacuate", "application/json", strings.NewReader("{}"))
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("evacuate %s: %v %v", busiest, res, err)
	}
	res.Body.Close()
	lowest := 4
	d.waitFor(t, "the drained cell to be empty with 4 instances running elsewhere", 60*time.Second, func() bool {
		l := d.instances("web")
		if n := runningIndices(l); n < lowest {
			lowest = n
		}
		for _, a := range l {
			if a.CellID == busiest || a.State != "RUNNING" || a.Presence != "ORDINARY" {
				return false
			}
		}
		return len(l) == 4
	})
	if lowest < 4 {
		t.Fatalf("running indices dropped to %d of 4 during the drain", lowest)
	}
}
