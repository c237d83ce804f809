package workflows_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/updatable-lrps/bbs/workflows"
)

// The input of a run continued by the flag-based workflow, as it wrote it (see the run 3
// start of testdata/rollout/flags/continue_as_new_cancel_run3.json), with every carried
// field set: the current code must read all of it, and write it back the same, so that runs
// continued by either version, before and during a deploy, carry on where they were.
const continuedByFlags = `{"rollout_id":"r1","process_guid":"app","domain":"cf-apps","from_definition_id":"def1",` +
	`"to_definition_id":"def2","kind":"update","max_in_flight":1,"index_deadline":300000000000,` +
	`"continue_as_new_every":2,"next_index":3,"updated":[0],"replaced":[0,1],"given_up":[2],"healthy":true,` +
	`"canceling":true,"paused":true,"superseded":["def0"],"pending_rollback":"def9"}`

func TestRolloutCarriedStateKeepsItsJSON(t *testing.T) {
	var in workflows.RolloutInput
	if err := json.Unmarshal([]byte(continuedByFlags), &in); err != nil {
		t.Fatal(err)
	}
	if in.NextIndex != 3 || !slices.Equal(in.Updated, []int32{0}) || !slices.Equal(in.Replaced, []int32{0, 1}) ||
		!slices.Equal(in.GivenUp, []int32{2}) || !in.Healthy || !in.Canceling || !in.Paused ||
		!slices.Equal(in.Superseded, []string{"def0"}) || in.PendingRollback != "def9" || in.ContinueAsNewEvery != 2 {
		t.Fatalf("read %+v", in)
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(continuedByFlags), &want); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Fatalf("written back as\n %s\nwant\n %s", gb, wb)
	}
	// A fresh start writes none of it.
	fresh, err := json.Marshal(workflows.RolloutInput{RolloutID: "r1", ProcessGUID: "app", FromDefinitionID: "def1", ToDefinitionID: "def2"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"rollout_id":"r1","process_guid":"app","from_definition_id":"def1","to_definition_id":"def2"}`; string(fresh) != want {
		t.Fatalf("a fresh start is %s, want %s", fresh, want)
	}
}
