package protocol_test

import (
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/internal/testwait"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// simDesiredLRP is an LRP whose sim instances start after 20 ms and pass their check.
func simDesiredLRP(guid string, instances int32, version string) *pb.DesiredLRP {
	return &pb.DesiredLRP{
		ProcessGuid: guid, Domain: "cf-apps", RootFs: "preloaded:cflinuxfs4", Instances: instances,
		MemoryMb: 32, DiskMb: 32, Ports: []uint32{8080},
		EnvironmentVariables: []*pb.EnvironmentVariable{{Name: "SIM_START_DELAY_MS", Value: "20"}, {Name: "VERSION", Value: version}},
		Action:               &pb.Action{RunAction: &pb.RunAction{Path: "/app/server", User: "vcap"}},
		CheckDefinition:      &pb.CheckDefinition{Checks: []*pb.Check{{HttpCheck: &pb.HTTPCheck{Port: 8080, IntervalMs: 1000}}}},
		MetricTags:           map[string]*pb.MetricTagValue{"source_id": {Static: guid}},
	}
}

// A rolling update started through the protocol's update with a definition walks the
// instances of the real system (the worker's workflow, placement, sim cells) to it; a
// rollback through the protocol walks them back.
func TestRollingUpdateThroughTheProtocol(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Cells: 2,
		Capacity: model.CellCapacity{MemoryMB: 1024, DiskMB: 1024, Containers: 20}})
	s := &server{t: t, url: c.ProtocolURL, store: c.Store}
	s.desire(simDesiredLRP("web", 3, "1"))
	running := func(def string) int {
		lrps, err := c.Store.ActualLRPs(t.Context(), model.ActualLRPFilter{ProcessGUID: "web"})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range lrps {
			if a.State == model.StateRunning && a.DefinitionID == def {
				n++
			}
		}
		return n
	}
	walked := func(to string) func() bool {
		return func() bool {
			r, err := c.Store.RolloutByProcessGUID(t.Context(), "web")
			return err == nil && r.ToDefinitionID == to && r.State == model.RolloutCompleted && running(to) == 3 && running("web")+running("v2")-running(to) == 0
		}
	}
	testwait.Until(t, 30*time.Second, 50*time.Millisecond, "3 instances of web running", func() bool { return running("web") == 3 })

	v2 := definitionOf(t, simDesiredLRP("web", 3, "2"), "v2")
	if err := s.update("web", &pb.DesiredLRPUpdate{Definition: v2}); err != nil {
		t.Fatalf("update with a definition: %v", err)
	}
	testwait.Until(t, 60*time.Second, 50*time.Millisecond, "the rollout to v2 completed", walked("v2"))
	got := s.get("r3", "web")
	want := proto.Clone(simDesiredLRP("web", 3, "2")).(*pb.DesiredLRP)
	// PopulateMetricsGuid fills the metrics guid from the source_id tag.
	want.DefinitionId, want.ModificationTag, want.Routes, want.MetricsGuid = "v2", got.GetModificationTag(), &pb.ProtoRoutes{}, "web"
	if !proto.Equal(got, want) {
		t.Fatalf("after the rollout: %s", diffProto(got, want))
	}

	var resp pb.DesiredLRPLifecycleResponse
	s.post("/v1/desired_lrp/rollback", &pb.RollbackDesiredLRPRequest{ProcessGuid: "web", DefinitionId: "web"}, &resp)
	if resp.GetError() != nil {
		t.Fatalf("rollback: %v", resp.GetError())
	}
	testwait.Until(t, 60*time.Second, 50*time.Millisecond, "the rollback to web completed", walked("web"))
	if got := s.get("r3", "web"); got.GetDefinitionId() != "web" || got.GetEnvironmentVariables()[1].GetValue() != "1" {
		t.Fatalf("after the rollback: %v", got)
	}
}
