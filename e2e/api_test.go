package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/freeport"
)

type obj = map[string]any

func desiredLRP(guid string, instances int) obj {
	return obj{
		"process_guid": guid,
		"domain":       "cf-apps",
		"instances":    instances,
		"rootfs":       "preloaded:cflinuxfs4",
		"memory_mb":    256,
		"disk_mb":      512,
		"ports":        []int{8080},
		"routes":       obj{"cf-router": []obj{{"hostnames": []string{guid + ".example.com"}, "port": 8080}}},
		"annotation":   "etag-1",
		"env":          []obj{{"name": "GREETING", "value": "hello"}},
		"action":       obj{"run": obj{"path": "/bin/sh", "args": []string{"-c", "exec ./server"}}},
		"monitor":      obj{"run": obj{"path": "/bin/nc", "args": []string{"-z", "127.0.0.1", "8080"}}},
	}
}

// TestAPIEndToEnd starts the real binary, desires an LRP over HTTP, reads it back through every
// read route, changes it, removes it, and stops the server with SIGTERM.
func TestAPIEndToEnd(t *testing.T) {
	port, protocolPort := freeport.Port(t), freeport.Port(t)
	p := start(t, []string{"DATABASE_URL=" + dbtest.NewURL(t)}, "api", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--bbs-listen", fmt.Sprintf("127.0.0.1:%d", protocolPort))
	c := client{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	c.waitAvailable(p, 30*time.Second)
	// Beside the JSON API, the BBS's own protocol: an empty POST to /v1/ping answers a
	// protobuf PingResponse{available: true} (field 1, varint 1).
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/ping", protocolPort), "application/x-protobuf", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-protobuf" || string(body) != "\x08\x01" {
		t.Fatalf("BBS protocol ping: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}

	c.mustPost("/v1/domains/upsert", obj{"domain": "cf-apps", "ttl": 0}, nil)
	var domains struct{ Domains []string }
	c.mustPost("/v1/domains/list", nil, &domains)
	if len(domains.Domains) != 1 || domains.Domains[0] != "cf-apps" {
		t.Fatalf("domains = %v", domains.Domains)
	}

	var desired struct {
		DesiredLRP obj `json:"desired_lrp"`
	}
	c.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": desiredLRP("web", 3)}, &desired)
	if desired.DesiredLRP["definition_id"] != "web" {
		t.Fatalf("desire answered %v", desired.DesiredLRP)
	}
	var conflict struct{ Error struct{ Type string } }
	if status := c.post("/v1/desired_lrp/desire", obj{"desired_lrp": desiredLRP("web", 1)}, &conflict); status != http.StatusConflict || conflict.Error.Type != "ResourceExists" {
		t.Fatalf("duplicate desire: %d %+v", status, conflict)
	}

	// Every read route sees it.
	var got struct {
		DesiredLRP obj `json:"desired_lrp"`
	}
	c.mustPost("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "web"}, &got)
	for field, want := range map[string]any{"process_guid": "web", "domain": "cf-apps", "instances": 3.0,
		"rootfs": "preloaded:cflinuxfs4", "memory_mb": 256.0, "annotation": "etag-1", "definition_id": "web"} {
		if got.DesiredLRP[field] != want {
			t.Errorf("desired_lrp.%s = %v, want %v", field, got.DesiredLRP[field], want)
		}
	}
	if _, ok := got.DesiredLRP["previous_definition_id"]; ok {
		t.Error("previous_definition_id is set with no rollout in progress")
	}
	var list struct {
		DesiredLRPs []obj `json:"desired_lrps"`
	}
	c.mustPost("/v1/desired_lrps/list", obj{"domain": "cf-apps"}, &list)
	if len(list.DesiredLRPs) != 1 {
		t.Fatalf("desired_lrps = %d", len(list.DesiredLRPs))
	}
	var infos struct {
		Infos []obj `json:"desired_lrp_scheduling_infos"`
	}
	c.mustPost("/v1/desired_lrp_scheduling_infos/list", obj{"process_guids": []string{"web"}}, &infos)
	if len(infos.Infos) != 1 || infos.Infos[0]["memory_mb"] != 256.0 || infos.Infos[0]["action"] != nil {
		t.Fatalf("scheduling infos = %v", infos.Infos)
	}
	var dep struct {
		LRPDeployment obj `json:"lrp_deployment"`
	}
	c.mustPost("/v1/lrp_deployments/get_by_process_guid", obj{"process_guid": "web"}, &dep)
	if dep.LRPDeployment["active_definition_id"] != "web" || dep.LRPDeployment["healthy_definition_id"] != "" ||
		len(dep.LRPDeployment["definitions"].(obj)) != 1 {
		t.Fatalf("lrp deployment = %v", dep.LRPDeployment)
	}
	var deps struct {
		LRPDeployments []obj `json:"lrp_deployments"`
	}
	c.mustPost("/v1/lrp_deployments/list", nil, &deps)
	if len(deps.LRPDeployments) != 1 {
		t.Fatalf("lrp deployments = %d", len(deps.LRPDeployments))
	}
	var actuals struct {
		ActualLRPs []obj `json:"actual_lrps"`
	}
	c.mustPost("/v1/actual_lrps/list", obj{"process_guid": "web"}, &actuals)
	if len(actuals.ActualLRPs) != 3 {
		t.Fatalf("actual lrps = %d, want 3", len(actuals.ActualLRPs))
	}
	for i, a := range actuals.ActualLRPs {
		if a["index"] != float64(i) || a["state"] != "UNCLAIMED" || a["definition_id"] != "web" || a["presence"] != "ORDINARY" {
			t.Fatalf("actual lrp %d = %v", i, a)
		}
	}
	var groups struct {
		Groups []obj `json:"actual_lrp_groups"`
	}
	c.mustPost("/v1/actual_lrp_groups/list", obj{"domain": "cf-apps"}, &groups)
	if len(groups.Groups) != 3 {
		t.Fatalf("groups = %d", len(groups.Groups))
	}
	c.mustPost("/v1/actual_lrp_groups/list_by_process_guid", obj{"process_guid": "web"}, &groups)
	if len(groups.Groups) != 3 {
		t.Fatalf("groups by guid = %d", len(groups.Groups))
	}
	var group struct {
		Group obj `json:"actual_lrp_group"`
	}
	c.mustPost("/v1/actual_lrp_groups/get_by_process_guid_and_index", obj{"process_guid": "web", "index": 2}, &group)
	if group.Group["instance"].(obj)["index"] != 2.0 {
		t.Fatalf("group = %v", group.Group)
	}
	var rollouts struct{ Rollouts []obj }
	c.mustPost("/v1/rollouts/list", obj{"process_guid": "web"}, &rollouts)
	if rollouts.Rollouts == nil || len(rollouts.Rollouts) != 0 {
		t.Fatalf("rollouts = %v", rollouts.Rollouts)
	}
	if status := c.post("/v1/rollouts/get", obj{"process_guid": "web"}, nil); status != http.StatusNotFound {
		t.Fatalf("rollouts/get with none = %d", status)
	}

	// Scale down, retire, remove.
	c.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"instances": 2, "annotation": "etag-2"}}, &got)
	if got.DesiredLRP["instances"] != 2.0 || got.DesiredLRP["annotation"] != "etag-2" {
		t.Fatalf("updated = %v", got.DesiredLRP)
	}
	c.mustPost("/v1/actual_lrps/retire", obj{"actual_lrp_key": obj{"process_guid": "web", "index": 0, "domain": "cf-apps"}}, nil)
	c.mustPost("/v1/actual_lrps/list", obj{"process_guid": "web"}, &actuals)
	if len(actuals.ActualLRPs) != 1 || actuals.ActualLRPs[0]["index"] != 1.0 {
		t.Fatalf("after scale down and retire: %v", actuals.ActualLRPs)
	}
	c.mustPost("/v1/desired_lrp/remove", obj{"process_guid": "web"}, nil)
	if status := c.post("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "web"}, nil); status != http.StatusNotFound {
		t.Fatalf("get after remove = %d", status)
	}
	c.mustPost("/v1/actual_lrps/list", obj{"process_guid": "web"}, &actuals)
	if len(actuals.ActualLRPs) != 0 {
		t.Fatalf("instances after remove: %v", actuals.ActualLRPs)
	}

	p.stop(t, syscall.SIGTERM, 15*time.Second)
}

// A non-loopback listener without mutual TLS is refused: whoever reaches the API can make
// cells run any command.
func TestAPIRefusesPlainHTTPBeyondLoopback(t *testing.T) {
	p := start(t, []string{"DATABASE_URL=" + dbtest.NewURL(t)}, "api", "--listen", fmt.Sprintf("0.0.0.0:%d", freeport.Port(t)))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("bbs api kept running on 0.0.0.0 without TLS")
	}
	if p.err == nil || !strings.Contains(p.out.String(), "mutual TLS") {
		t.Fatalf("exit %v, output %q", p.err, p.out.String())
	}
}

func TestAPIWithoutDatabaseURLExplains(t *testing.T) {
	p := start(t, nil, "api")
	<-p.done
	if p.err == nil || !strings.Contains(p.out.String(), "DATABASE_URL") {
		t.Fatalf("exit %v, output %q", p.err, p.out.String())
	}
}
