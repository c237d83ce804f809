package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// webDefinition is a definition of cmd/demoapp (at bin) answering as version: an HTTP app on
// port 8080 with a health check. It takes a second to start, as real apps do, so that a
// rollout lasts long enough for faults to land in the middle of it.
func webDefinition(bin, id, version string) model.LRPDefinition {
	return model.LRPDefinition{
		DefinitionID: id, RootFS: "preloaded:cflinuxfs4", MemoryMB: 64, DiskMB: 64, Ports: []uint32{8080},
		Env:             []model.EnvironmentVariable{{Name: "DEMO_VERSION", Value: version}},
		Action:          &model.Action{Run: &model.RunAction{Path: "/bin/sh", Args: []string{"-c", "sleep 1; exec " + bin}}},
		CheckDefinition: &model.CheckDefinition{Checks: []model.Check{{HTTPCheck: &model.HTTPCheck{Port: 8080, Path: "/health"}}}},
	}
}

// crashingDefinition is webDefinition's app released broken from index 1 on: those
// instances print why and exit at start, a crash loop; index 0 runs. Rolled out with the
// default strategy it is reverted by itself once index 1 has crashed three times, after
// index 0 was updated — so that the revert walks an index back.
func crashingDefinition(bin, id, version string) model.LRPDefinition {
	def := webDefinition(bin, id, version)
	def.Action = &model.Action{Run: &model.RunAction{Path: "/bin/sh", Args: []string{"-c",
		`if [ "${CF_INSTANCE_INDEX:-0}" -ge 1 ]; then echo "index $CF_INSTANCE_INDEX: config missing" >&2; exit 1; fi; sleep 1; exec ` + bin}}}
	return def
}

// webLRP is an LRP of n instances of def, routed as <guid>.example.com.
func webLRP(guid string, n int32, def model.LRPDefinition) *model.DesiredLRP {
	routes, _ := json.Marshal([]map[string]any{{"hostnames": []string{host(guid)}, "port": 8080}})
	return &model.DesiredLRP{ProcessGUID: guid, Domain: "chaos", Instances: n,
		Routes: model.Routes{"cf-router": routes}, LRPDefinition: def}
}

// host is the hostname the router serves an app under.
func host(guid string) string { return guid + ".example.com" }

// simDefinition is a definition for sim cells: nothing runs, every instance starts after
// startDelay and passes its health check (package executor/sim).
func simDefinition(id string, startDelay time.Duration) model.LRPDefinition {
	return model.LRPDefinition{
		DefinitionID: id, RootFS: "preloaded:cflinuxfs4", MemoryMB: 16, DiskMB: 16, Ports: []uint32{8080},
		Env:             []model.EnvironmentVariable{{Name: "SIM_START_DELAY_MS", Value: fmt.Sprint(startDelay.Milliseconds())}},
		Action:          &model.Action{Run: &model.RunAction{Path: "/bin/app"}},
		CheckDefinition: &model.CheckDefinition{Checks: []model.Check{{TCPCheck: &model.TCPCheck{Port: 8080}}}},
	}
}

// settled reports whether an LRP is at rest: exactly one instance per index below n, each
// RUNNING, ORDINARY, not retiring and on def, and none beyond; otherwise why not.
func settled(all []model.ActualLRP, guid string, n int32, def string) (bool, string) {
	perIndex := map[int32]int{}
	for _, a := range all {
		if a.ProcessGUID != guid {
			continue
		}
		perIndex[a.Index]++
		switch {
		case a.Index >= n:
			return false, fmt.Sprintf("index %d beyond %d instances", a.Index, n)
		case a.State != model.StateRunning || a.Presence != model.PresenceOrdinary || a.Retiring || a.DefinitionID != def:
			return false, fmt.Sprintf("index %d is %s %s on %s%s (want RUNNING ORDINARY on %s)", a.Index, a.State, a.Presence,
				a.DefinitionID, map[bool]string{true: ", retiring"}[a.Retiring], def)
		}
	}
	for i := int32(0); i < n; i++ {
		if perIndex[i] != 1 {
			return false, fmt.Sprintf("index %d has %d instances", i, perIndex[i])
		}
	}
	return true, ""
}

// allInstances reads every instance, through faults.
func (c *Cluster) allInstances(ctx context.Context) ([]model.ActualLRP, error) {
	var all []model.ActualLRP
	err := retry(ctx, func(ctx context.Context) (err error) {
		all, err = c.BBS.ActualLRPs(ctx, model.ActualLRPFilter{})
		return err
	})
	return all, err
}
