package db_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

func stackPatch(rootfs string) model.DefinitionPatch { return model.DefinitionPatch{RootFS: &rootfs} }

func groupSpec(id string, waves ...float64) model.RolloutGroupSpec {
	spec := model.RolloutGroupSpec{GroupID: id, Selector: model.RolloutGroupSelector{Domain: "cf-apps"},
		Patch: stackPatch("preloaded:cflinuxfs4-v2"), MaxConcurrentLRPs: 2, MaxFailedPercent: 40}
	for _, w := range waves {
		spec.Waves = append(spec.Waves, model.RolloutWave{Percent: w})
	}
	return spec
}

// desireFleet desires n LRPs app-00 … in domain cf-apps.
func desireFleet(t *testing.T, s *db.Store, n int) {
	t.Helper()
	for i := range n {
		desire(t, s, newLRP(fmt.Sprintf("app-%02d", i), 1))
	}
}

func advance(t *testing.T, s *db.Store, id string) *db.GroupAdvance {
	t.Helper()
	adv, err := s.AdvanceRolloutGroup(ctx, id, nil)
	if err != nil {
		t.Fatalf("AdvanceRolloutGroup: %v", err)
	}
	return adv
}

func startedGUIDs(adv *db.GroupAdvance) []string {
	var out []string
	for _, m := range adv.Started {
		out = append(out, m.Rollout.ProcessGUID)
	}
	return out
}

// endMember ends a member's rollout in state, as its workflow would.
func endMember(t *testing.T, s *db.Store, guid, state string) {
	t.Helper()
	r, err := s.RolloutByProcessGUID(ctx, guid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishRollout(ctx, r.ID, state, "test"); err != nil {
		t.Fatal(err)
	}
}

func TestCreateRolloutGroupRefusesAndWritesNothing(t *testing.T) {
	s := dbtest.NewStore(t)
	desireFleet(t, s, 3)
	noChange := groupSpec("g1")
	noChange.Patch = stackPatch("docker:///busybox") // what every member runs already
	unknownGUID := groupSpec("g2")
	unknownGUID.Selector = model.RolloutGroupSelector{ProcessGUIDs: []string{"app-00", "nope"}}
	empty := groupSpec("g3")
	empty.Selector = model.RolloutGroupSelector{Domain: "other"}
	window := groupSpec("g4")
	window.Window = "maintenance"
	badWaves := groupSpec("g5", 50, 40, 100)
	for name, spec := range map[string]model.RolloutGroupSpec{"no change": noChange, "unknown guid": unknownGUID,
		"empty selection": empty, "unknown window": window, "falling waves": badWaves} {
		_, err := s.CreateRolloutGroup(ctx, spec)
		wantType(t, err, model.ErrInvalidRequest)
		t.Logf("%s: %v", name, err)
	}
	if n := count(t, s, `SELECT count(*) FROM rollout_groups`) + count(t, s, `SELECT count(*) FROM rollout_group_members`); n != 0 {
		t.Fatalf("refused groups wrote %d rows", n)
	}
	if _, err := s.CreateRolloutGroup(ctx, groupSpec("g")); err != nil {
		t.Fatal(err)
	}
	_, err := s.CreateRolloutGroup(ctx, groupSpec("g"))
	wantType(t, err, model.ErrResourceExists)
}

func TestRolloutGroupWavesAndBudget(t *testing.T) {
	s := dbtest.NewStore(t)
	desireFleet(t, s, 5)
	// An LRP outside the selection, and one member whose definition the patch leaves as it is.
	other := newLRP("elsewhere", 1)
	other.Domain = "other"
	desire(t, s, other)
	same := newLRP("app-05", 1)
	same.RootFS = "preloaded:cflinuxfs4-v2"
	desire(t, s, same)

	g, err := s.CreateRolloutGroup(ctx, groupSpec("stack", 20, 100))
	if err != nil {
		t.Fatal(err)
	}
	// Six members: wave 0 holds ceil(20 % of 6) = 2, wave 1 the other 4 (app-05 skipped).
	if len(g.Waves) != 2 || len(g.Waves[0].Members) != 2 || len(g.Waves[1].Members) != 4 || g.State != model.GroupPending {
		t.Fatalf("group = %+v", g)
	}
	if m := g.Waves[1].Members[3]; m.ProcessGUID != "app-05" || m.State != model.MemberSkipped {
		t.Fatalf("unchanged member = %+v", m)
	}

	adv := advance(t, s, "stack")
	if got := startedGUIDs(adv); fmt.Sprint(got) != "[app-00 app-01]" || adv.State != model.GroupRolling {
		t.Fatalf("first decision started %v (%+v)", got, adv)
	}
	r := adv.Started[0].Rollout
	if r.GroupID != "stack" || r.ToDefinitionID != "stack" || r.Kind != model.RolloutKindUpdate {
		t.Fatalf("member rollout = %+v", r)
	}
	d, err := s.DesiredLRPByProcessGUID(ctx, "app-00")
	if err != nil || d.RootFS != "preloaded:cflinuxfs4-v2" || d.DefinitionID != "stack" || d.Action == nil {
		t.Fatalf("member's new definition = %+v, %v", d, err)
	}
	if adv := advance(t, s, "stack"); len(adv.Started) != 0 || adv.Rolling != 2 {
		t.Fatalf("a repeated decision changed something: %+v", adv)
	}
	endMember(t, s, "app-00", model.RolloutCompleted)
	endMember(t, s, "app-01", model.RolloutCompleted)
	// Wave 0 ended; the next opens at once (no pause) and starts 2 of its members (budget 2).
	adv = advance(t, s, "stack")
	if got := startedGUIDs(adv); fmt.Sprint(got) != "[app-02 app-03]" || adv.Wave != 1 {
		t.Fatalf("wave 1 started %v (%+v)", got, adv)
	}
	endMember(t, s, "app-02", model.RolloutCompleted)
	if got := startedGUIDs(advance(t, s, "stack")); fmt.Sprint(got) != "[app-04]" {
		t.Fatalf("freed slot went to %v", got)
	}
	endMember(t, s, "app-03", model.RolloutCompleted)
	endMember(t, s, "app-04", model.RolloutCompleted)
	adv = advance(t, s, "stack")
	if adv.State != model.GroupCompleted || !adv.Done {
		t.Fatalf("after every member: %+v", adv)
	}
	g, err = s.RolloutGroup(ctx, "stack")
	if err != nil || g.State != model.GroupCompleted || g.Waves[1].State != model.WaveCompleted || g.Waves[1].Counts[model.MemberCompleted] != 3 || g.FinishedAt == 0 {
		t.Fatalf("completed group = %+v, %v", g, err)
	}
	if n := count(t, s, `SELECT count(*) FROM desired_lrps WHERE process_guid = 'elsewhere' AND active_definition_id <> 'elsewhere'`); n != 0 {
		t.Fatal("an LRP outside the selection was updated")
	}
}

func TestRolloutGroupAbortsPastMaxFailedPercent(t *testing.T) {
	s := dbtest.NewStore(t)
	desireFleet(t, s, 6)
	spec := groupSpec("g", 50, 100)
	spec.MaxConcurrentLRPs, spec.MaxFailedPercent = 3, 40
	if _, err := s.CreateRolloutGroup(ctx, spec); err != nil {
		t.Fatal(err)
	}
	advance(t, s, "g")
	endMember(t, s, "app-00", model.RolloutReverted) // 1 of 3: 33 %, within 40 %
	if adv := advance(t, s, "g"); adv.State != model.GroupRolling {
		t.Fatalf("one failure of three aborted: %+v", adv)
	}
	endMember(t, s, "app-01", model.RolloutFailed) // 2 of 3: 67 %
	adv := advance(t, s, "g")
	if adv.State != model.GroupAborted || len(adv.Aborting) != 1 || adv.Aborting[0].Rollout.ProcessGUID != "app-02" || adv.Done {
		t.Fatalf("past max_failed_percent: %+v", adv)
	}
	t.Log(adv.Reason)
	g, _ := s.RolloutGroup(ctx, "g")
	if g.Waves[1].State != model.WaveSkipped || g.Waves[1].Counts[model.MemberSkipped] != 3 || g.Waves[0].State != model.WaveRolling {
		t.Fatalf("aborted group = %+v", g.Waves)
	}
	endMember(t, s, "app-02", model.RolloutReverted)
	if adv := advance(t, s, "g"); !adv.Done || len(adv.Started) != 0 {
		t.Fatalf("aborted group with nothing rolling: %+v", adv)
	}
	if ids, _ := s.RolloutGroupsInProgress(ctx); len(ids) != 0 {
		t.Fatalf("groups in progress = %v", ids)
	}
}

func TestRolloutGroupControls(t *testing.T) {
	s := dbtest.NewStore(t)
	desireFleet(t, s, 3)
	spec := groupSpec("g")
	spec.MaxConcurrentLRPs = 1
	if _, err := s.CreateRolloutGroup(ctx, spec); err != nil {
		t.Fatal(err)
	}
	advance(t, s, "g")
	for range 2 { // a repeated pause answers as the first
		if g, err := s.ControlRolloutGroup(ctx, "g", model.GroupControlPause, ""); err != nil || g.State != model.GroupPaused {
			t.Fatalf("pause: %+v, %v", g, err)
		}
	}
	endMember(t, s, "app-00", model.RolloutCompleted)
	if adv := advance(t, s, "g"); len(adv.Started) != 0 || adv.State != model.GroupPaused {
		t.Fatalf("a paused group started members: %+v", adv)
	}
	if g, err := s.ControlRolloutGroup(ctx, "g", model.GroupControlResume, ""); err != nil || g.State != model.GroupRolling {
		t.Fatalf("resume: %+v, %v", g, err)
	}
	if got := startedGUIDs(advance(t, s, "g")); fmt.Sprint(got) != "[app-01]" {
		t.Fatalf("resumed group started %v", got)
	}
	g, err := s.ControlRolloutGroup(ctx, "g", model.GroupControlAbort, "bad stack")
	if err != nil || g.State != model.GroupAborted || g.Reason != "aborted by an operator: bad stack" {
		t.Fatalf("abort: %+v, %v", g, err)
	}
	if g.Waves[0].Members[2].State != model.MemberSkipped {
		t.Fatalf("a pending member of an aborted group = %+v", g.Waves[0].Members[2])
	}
	_, err = s.ControlRolloutGroup(ctx, "g", model.GroupControlResume, "")
	wantType(t, err, model.ErrInvalidPhase)
	_, err = s.ControlRolloutGroup(ctx, "none", model.GroupControlPause, "")
	wantType(t, err, model.ErrResourceNotFound)
}

// A member whose LRP is removed, or already rolling out, is skipped, not failed.
func TestRolloutGroupSkipsMembersThatCannotRoll(t *testing.T) {
	s := dbtest.NewStore(t)
	desireFleet(t, s, 3)
	spec := groupSpec("g")
	spec.MaxFailedPercent = 0 // any failure would abort
	if _, err := s.CreateRolloutGroup(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app-00", Kind: model.RolloutKindUpdate, Definition: newDef("mine")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveDesiredLRP(ctx, "app-01"); err != nil {
		t.Fatal(err)
	}
	adv := advance(t, s, "g")
	if got := startedGUIDs(adv); fmt.Sprint(got) != "[app-02]" || adv.State != model.GroupRolling {
		t.Fatalf("started %v (%+v)", got, adv)
	}
	g, _ := s.RolloutGroup(ctx, "g")
	for _, m := range g.Waves[0].Members[:2] {
		if m.State != model.MemberSkipped || m.Reason == "" {
			t.Fatalf("member = %+v", m)
		}
		t.Logf("%s: %s", m.ProcessGUID, m.Reason)
	}
	// Removing a rolling member's LRP skips it too.
	if _, err := s.RemoveDesiredLRP(ctx, "app-02"); err != nil {
		t.Fatal(err)
	}
	if adv := advance(t, s, "g"); adv.State != model.GroupCompleted {
		t.Fatalf("after the last member's removal: %+v", adv)
	}
}

// Claims of a group's new instances on one cell never pass max_concurrent_per_cell, however
// many cells claim at once; other LRPs' claims are not counted.
func TestRolloutGroupPerCellBudgetHoldsAtClaim(t *testing.T) {
	s := dbtest.NewStore(t)
	desireFleet(t, s, 9)
	spec := groupSpec("g")
	spec.MaxConcurrentLRPs, spec.MaxConcurrentPerCell = 9, 2
	if _, err := s.CreateRolloutGroup(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if adv := advance(t, s, "g"); len(adv.Started) != 9 {
		t.Fatalf("started %d", len(adv.Started))
	}
	for i := range 9 {
		if _, err := s.DesireInstance(ctx, fmt.Sprintf("app-%02d", i), "g", 0); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := model.ActualLRPKey{ProcessGUID: fmt.Sprintf("app-%02d", i), DefinitionID: "g", Index: 0, Domain: "cf-apps"}
			_, errs[i] = s.ClaimActualLRP(ctx, key, model.ActualLRPInstanceKey{InstanceGUID: fmt.Sprintf("new-%d", i), CellID: "cell-1"}, nil)
		}()
	}
	wg.Wait()
	refused := 0
	for _, err := range errs {
		if err != nil {
			wantType(t, err, model.ErrCannotBeClaimed)
			refused++
		}
	}
	if refused != 4 {
		t.Fatalf("%d of 6 claims refused on one cell, want 4: %v", refused, errs)
	}
	g, _ := s.RolloutGroup(ctx, "g")
	if g.Budgets.PerCellMaxInUse != 2 || g.Budgets.LRPsInUse != 9 {
		t.Fatalf("budgets = %+v", g.Budgets)
	}
	// The batch claims of another cell: two admitted of three.
	var reports []db.InstanceReport
	for i := range 3 {
		reports = append(reports, db.InstanceReport{Key: model.ActualLRPKey{ProcessGUID: fmt.Sprintf("app-%02d", i+6), DefinitionID: "g", Domain: "cf-apps"},
			InstanceKey: model.ActualLRPInstanceKey{InstanceGUID: fmt.Sprintf("b-%d", i), CellID: "cell-2"}})
	}
	res, err := s.ClaimActualLRPs(ctx, reports)
	if err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for _, r := range res {
		if r.Err == nil {
			admitted++
		}
	}
	if admitted != 2 || countClaimed(t, s, "cell-2") != 2 {
		t.Fatalf("cell-2: %d admitted, %d claimed (%+v)", admitted, countClaimed(t, s, "cell-2"), res)
	}
}

func countClaimed(t *testing.T, s *db.Store, cell string) int {
	t.Helper()
	return count(t, s, `SELECT count(*) FROM actual_lrps WHERE cell_id = $1 AND state = 'CLAIMED'`, cell)
}
