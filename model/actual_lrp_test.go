package model_test

import (
	"fmt"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

var (
	noKey    = model.ActualLRPInstanceKey{}
	cell1Key = model.ActualLRPInstanceKey{InstanceGUID: "ig-1", CellID: "cell-1"}
	cell2Key = model.ActualLRPInstanceKey{InstanceGUID: "ig-2", CellID: "cell-2"}
	// Half-matching keys are different keys.
	cell1OtherInstance = model.ActualLRPInstanceKey{InstanceGUID: "ig-2", CellID: "cell-1"}
	otherCellSameGUID  = model.ActualLRPInstanceKey{InstanceGUID: "ig-1", CellID: "cell-2"}
)

// TestAllowsTransitionTo checks BBS's state machine as ARCHITECTURE.md records it ("Facts from
// BBS worth keeping", from BBS's models.ActualLRP.AllowsTransitionTo):
//
//	UNCLAIMED → UNCLAIMED | CLAIMED | RUNNING
//	CLAIMED   → UNCLAIMED (key cleared) | CLAIMED (same key) | RUNNING | CRASHED (same key)
//	RUNNING   → UNCLAIMED (key cleared) | CLAIMED | RUNNING | CRASHED (same key)
//	CRASHED   → UNCLAIMED (key cleared) | CLAIMED | RUNNING (same key)
//
// UNCLAIMED and CRASHED instances carry no instance key; CLAIMED and RUNNING ones carry
// cell1Key here.
func TestAllowsTransitionTo(t *testing.T) {
	const (
		U = model.StateUnclaimed
		C = model.StateClaimed
		R = model.StateRunning
		X = model.StateCrashed
	)
	heldKey := map[string]model.ActualLRPInstanceKey{U: noKey, C: cell1Key, R: cell1Key, X: noKey}
	// Columns: the transition asked with the empty key, with cell1Key, with cell2Key.
	table := []struct {
		from, to            string
		empty, cell1, cell2 bool
	}{
		{U, U, true, true, true},
		{U, C, true, true, true},
		{U, R, true, true, true},
		{U, X, false, false, false},

		{C, U, true, false, false},
		{C, C, false, true, false},
		{C, R, true, true, true},
		{C, X, false, true, false},

		{R, U, true, false, false},
		{R, C, false, true, false},
		{R, R, false, true, false},
		{R, X, false, true, false},

		// A CRASHED instance has no key, so "same key" is the empty key: a cell cannot claim
		// or start it directly; convergence unclaims it first.
		{X, U, true, false, false},
		{X, C, true, false, false},
		{X, R, true, false, false},
		{X, X, false, false, false},
	}
	seen := map[[2]string]bool{}
	for _, row := range table {
		seen[[2]string{row.from, row.to}] = true
		for _, c := range []struct {
			name string
			ik   model.ActualLRPInstanceKey
			want bool
		}{
			{"empty key", noKey, row.empty},
			{"cell-1 key", cell1Key, row.cell1},
			{"cell-2 key", cell2Key, row.cell2},
		} {
			t.Run(fmt.Sprintf("%s→%s/%s", row.from, row.to, c.name), func(t *testing.T) {
				a := &model.ActualLRP{
					ActualLRPKey:         model.ActualLRPKey{ProcessGUID: "web-1", DefinitionID: "v1", Index: 0, Domain: "cf-apps"},
					ActualLRPInstanceKey: heldKey[row.from],
					State:                row.from,
				}
				if got := a.AllowsTransitionTo(c.ik, row.to); got != c.want {
					t.Errorf("%s (key %+v) → %s asked with %+v: got %v, want %v", row.from, a.ActualLRPInstanceKey, row.to, c.ik, got, c.want)
				}
			})
		}
	}
	for _, from := range []string{U, C, R, X} {
		for _, to := range []string{U, C, R, X} {
			if !seen[[2]string{from, to}] {
				t.Errorf("table misses %s→%s", from, to)
			}
		}
	}
}

func TestAllowsTransitionToHalfMatchingKeys(t *testing.T) {
	for _, state := range []string{model.StateClaimed, model.StateRunning} {
		for _, ik := range []model.ActualLRPInstanceKey{cell1OtherInstance, otherCellSameGUID} {
			for _, to := range []string{model.StateClaimed, model.StateRunning, model.StateCrashed, model.StateUnclaimed} {
				if state == model.StateClaimed && to == model.StateRunning {
					continue // CLAIMED → RUNNING is allowed with any key
				}
				t.Run(fmt.Sprintf("%s→%s/%s-%s", state, to, ik.InstanceGUID, ik.CellID), func(t *testing.T) {
					a := &model.ActualLRP{ActualLRPInstanceKey: cell1Key, State: state}
					if a.AllowsTransitionTo(ik, to) {
						t.Errorf("%s → %s allowed with a key that only half matches", state, to)
					}
				})
			}
		}
	}
}

func TestAllowsTransitionToUnknownStates(t *testing.T) {
	for _, c := range []struct{ from, to string }{
		{"", model.StateClaimed},
		{"BOGUS", model.StateUnclaimed},
		{model.StateUnclaimed, ""},
		{model.StateUnclaimed, "BOGUS"},
		{model.StateClaimed, "BOGUS"},
		{model.StateRunning, "running"},
		{model.StateCrashed, "BOGUS"},
	} {
		t.Run(c.from+"→"+c.to, func(t *testing.T) {
			a := &model.ActualLRP{State: c.from}
			for _, ik := range []model.ActualLRPInstanceKey{noKey, cell1Key} {
				a.ActualLRPInstanceKey = ik
				if a.AllowsTransitionTo(ik, c.to) {
					t.Errorf("%q → %q allowed", c.from, c.to)
				}
			}
		})
	}
}

func actual(guid, def string, index int32, state, presence string) model.ActualLRP {
	a := model.ActualLRP{
		ActualLRPKey: model.ActualLRPKey{ProcessGUID: guid, DefinitionID: def, Index: index, Domain: "cf-apps"},
		State:        state,
		Presence:     presence,
	}
	if state == model.StateClaimed || state == model.StateRunning {
		a.ActualLRPInstanceKey = model.ActualLRPInstanceKey{
			InstanceGUID: fmt.Sprintf("%s-%s-%d-%s", guid, def, index, presence),
			CellID:       "cell-" + presence,
		}
	}
	return a
}

// describe names a group's members by state and presence, e.g. "RUNNING/ORDINARY+RUNNING/EVACUATING".
func describe(g model.ActualLRPGroup) string {
	name := func(a *model.ActualLRP) string {
		if a == nil {
			return "-"
		}
		return fmt.Sprintf("%s:%s:%d:%s/%s", a.ProcessGUID, a.DefinitionID, a.Index, a.State, a.Presence)
	}
	return name(g.Instance) + " + " + name(g.Evacuating)
}

func TestGroupActualLRPs(t *testing.T) {
	const (
		ord  = model.PresenceOrdinary
		evac = model.PresenceEvacuating
		sus  = model.PresenceSuspect
		U    = model.StateUnclaimed
		C    = model.StateClaimed
		R    = model.StateRunning
		X    = model.StateCrashed
	)
	for _, c := range []struct {
		name string
		in   []model.ActualLRP
		want []string
	}{
		{"nothing", nil, nil},
		{"one ordinary", []model.ActualLRP{actual("a", "v1", 0, R, ord)},
			[]string{"a:v1:0:RUNNING/ORDINARY + -"}},
		{"ordinary and evacuating in one group",
			[]model.ActualLRP{actual("a", "v1", 0, C, ord), actual("a", "v1", 0, R, evac)},
			[]string{"a:v1:0:CLAIMED/ORDINARY + a:v1:0:RUNNING/EVACUATING"}},
		{"evacuating first, then ordinary",
			[]model.ActualLRP{actual("a", "v1", 0, R, evac), actual("a", "v1", 0, U, ord)},
			[]string{"a:v1:0:UNCLAIMED/ORDINARY + a:v1:0:RUNNING/EVACUATING"}},
		{"evacuating alone", []model.ActualLRP{actual("a", "v1", 0, R, evac)},
			[]string{"- + a:v1:0:RUNNING/EVACUATING"}},
		{"different definitions at the same index are separate groups",
			[]model.ActualLRP{actual("a", "v1", 0, R, ord), actual("a", "v2", 0, C, ord), actual("a", "v1", 0, R, evac)},
			[]string{"a:v1:0:RUNNING/ORDINARY + a:v1:0:RUNNING/EVACUATING", "a:v2:0:CLAIMED/ORDINARY + -"}},
		{"different indices and process guids are separate groups, in order of first appearance",
			[]model.ActualLRP{actual("b", "v1", 1, R, ord), actual("a", "v1", 1, R, ord), actual("b", "v1", 0, R, ord), actual("b", "v1", 1, R, evac)},
			[]string{"b:v1:1:RUNNING/ORDINARY + b:v1:1:RUNNING/EVACUATING", "a:v1:1:RUNNING/ORDINARY + -", "b:v1:0:RUNNING/ORDINARY + -"}},
		{"suspect alone", []model.ActualLRP{actual("a", "v1", 0, R, sus)},
			[]string{"a:v1:0:RUNNING/SUSPECT + -"}},
		{"suspect replaces an unclaimed ordinary",
			[]model.ActualLRP{actual("a", "v1", 0, U, ord), actual("a", "v1", 0, R, sus)},
			[]string{"a:v1:0:RUNNING/SUSPECT + -"}},
		{"suspect stays over a later unclaimed ordinary",
			[]model.ActualLRP{actual("a", "v1", 0, R, sus), actual("a", "v1", 0, U, ord)},
			[]string{"a:v1:0:RUNNING/SUSPECT + -"}},
		{"suspect replaces a claimed ordinary",
			[]model.ActualLRP{actual("a", "v1", 0, C, ord), actual("a", "v1", 0, R, sus)},
			[]string{"a:v1:0:RUNNING/SUSPECT + -"}},
		{"suspect stays over a later claimed ordinary",
			[]model.ActualLRP{actual("a", "v1", 0, R, sus), actual("a", "v1", 0, C, ord)},
			[]string{"a:v1:0:RUNNING/SUSPECT + -"}},
		{"suspect replaces a crashed ordinary",
			[]model.ActualLRP{actual("a", "v1", 0, X, ord), actual("a", "v1", 0, R, sus)},
			[]string{"a:v1:0:RUNNING/SUSPECT + -"}},
		{"suspect does not replace a running ordinary",
			[]model.ActualLRP{actual("a", "v1", 0, R, ord), actual("a", "v1", 0, R, sus)},
			[]string{"a:v1:0:RUNNING/ORDINARY + -"}},
		{"a later running ordinary replaces the suspect",
			[]model.ActualLRP{actual("a", "v1", 0, R, sus), actual("a", "v1", 0, R, ord)},
			[]string{"a:v1:0:RUNNING/ORDINARY + -"}},
		{"suspect, ordinary and evacuating",
			[]model.ActualLRP{actual("a", "v1", 0, C, ord), actual("a", "v1", 0, R, evac), actual("a", "v1", 0, R, sus)},
			[]string{"a:v1:0:RUNNING/SUSPECT + a:v1:0:RUNNING/EVACUATING"}},
		{"suspects of another definition do not stand in",
			[]model.ActualLRP{actual("a", "v1", 0, U, ord), actual("a", "v2", 0, R, sus)},
			[]string{"a:v1:0:UNCLAIMED/ORDINARY + -", "a:v2:0:RUNNING/SUSPECT + -"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			groups := model.GroupActualLRPs(c.in)
			var got []string
			for _, g := range groups {
				got = append(got, describe(g))
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("groups:\n got  %q\n want %q", got, c.want)
			}
			for _, g := range groups {
				if g.Instance != nil && g.Instance.Presence == model.PresenceEvacuating {
					t.Errorf("an evacuating instance stands as the group's instance: %s", describe(g))
				}
				if g.Evacuating != nil && g.Evacuating.Presence != model.PresenceEvacuating {
					t.Errorf("a non-evacuating instance stands as the group's evacuating one: %s", describe(g))
				}
			}
		})
	}
}
