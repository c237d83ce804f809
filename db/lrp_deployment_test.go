package db_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

func TestLRPDeploymentShowsLiveDefinitions(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("a", 1))

	dep, err := s.LRPDeploymentByProcessGUID(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// Promotion (seed 000): one definition keyed by the process guid, not yet healthy.
	if dep.ActiveDefinitionID != "a" || dep.HealthyDefinitionID != "" || len(dep.Definitions) != 1 ||
		dep.Definitions["a"].DefinitionID != "a" || dep.Definitions["a"].MemoryMB != 128 {
		t.Fatalf("deployment = %+v", dep)
	}

	addDefinition(t, s, "a", "v2")
	addDefinition(t, s, "a", "old")
	exec(t, s, `UPDATE lrp_definitions SET live = false, retired_at = now() WHERE definition_id = 'old'`)
	exec(t, s, `UPDATE desired_lrps SET active_definition_id = 'v2', healthy_definition_id = 'a' WHERE process_guid = 'a'`)
	dep, err = s.LRPDeploymentByProcessGUID(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(dep.Definitions) != 2 || dep.ActiveDefinitionID != "v2" || dep.HealthyDefinitionID != "a" {
		t.Fatalf("deployment = %+v, want definitions a and v2 (the retired one is history, not in the map)", dep)
	}
	if _, ok := dep.Definitions["old"]; ok {
		t.Fatal("a retired definition is in the map")
	}
	// Projection (seed 000): the DesiredLRP is the deployment through its active definition.
	d, err := s.DesiredLRPByProcessGUID(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if d.DefinitionID != "v2" || d.MemoryMB != 64 {
		t.Fatalf("projection = %+v, want definition v2", d.LRPDefinition)
	}

	_, err = s.LRPDeploymentByProcessGUID(ctx, "missing")
	wantType(t, err, model.ErrResourceNotFound)
}
