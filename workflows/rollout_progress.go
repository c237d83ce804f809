package workflows

import (
	"fmt"
	"slices"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// How a rollout shows where it stands (the progress query, the row, the Web UI) and how it
// ends.

func (r *rollout) currentIndex() int32 {
	if len(r.inFlight) > 0 {
		return slices.MinFunc(r.inFlight, func(a, b *step) int { return int(a.index - b.index) }).index
	}
	if r.phase.back() {
		if len(r.walked.Replaced) > 0 {
			return slices.Max(r.walked.Replaced)
		}
		return 0
	}
	return min(r.walked.NextIndex, r.instances)
}

func (r *rollout) queryProgress() (RolloutProgress, error) { return r.progress(), nil }

func (r *rollout) progress() RolloutProgress {
	p := RolloutProgress{
		RolloutID: r.in.RolloutID, ProcessGUID: r.in.ProcessGUID, State: r.phase.state(),
		CurrentIndex: r.currentIndex(), Instances: r.instances,
		Updated: append([]int32{}, r.walked.Updated...), GivenUp: append([]int32{}, r.walked.GivenUp...),
		InFlight:         []int32{},
		FromDefinitionID: r.in.FromDefinitionID, ToDefinitionID: r.in.ToDefinitionID,
		Superseded:  append([]string(nil), r.walked.Superseded...),
		MaxInFlight: r.in.MaxInFlight,
		Phase:       r.recordedPhase(), Step: r.walked.Step,
	}
	for _, s := range r.inFlight {
		p.InFlight = append(p.InFlight, s.index)
	}
	return p
}

// report shows where the walk stands: in the Web UI, and in the rollout row.
func (r *rollout) report() error {
	r.publish()
	return r.recordProgress()
}

// recordProgress stores the walk's position in the rollout row.
func (r *rollout) recordProgress() error {
	// A run in flight writes the counts itself, index by index: the walk's own are behind.
	in := activities.RecordProgressInput{RolloutID: r.in.RolloutID, Progress: r.progressRecord(), StateOnly: r.runInFlight()}
	return r.local(r.ctx, in, acts.RecordProgress, nil)
}

// progressRecord is the walk's position as the rollout row keeps it.
func (r *rollout) progressRecord() model.RolloutProgress {
	p := model.RolloutProgress{
		State: r.phase.state(), CurrentIndex: r.currentIndex(), Instances: r.instances,
		UpdatedInstances: r.updatedCount(), GivenUpIndices: append([]int32{}, r.walked.GivenUp...),
		RunID:   workflow.GetInfo(r.ctx).WorkflowExecution.RunID,
		Failure: r.walked.Failure, RevertFailure: r.walked.RevertFailure,
		Phase: r.recordedPhase(),
	}
	if r.canaryPhase() != "" {
		step := int32(r.walked.Step)
		p.Step = &step
	}
	return p
}

// updatedCount counts the updated indices the LRP still has after any scale-down.
func (r *rollout) updatedCount() int32 {
	var n int32
	for _, i := range r.walked.Updated {
		if i < r.instances {
			n++
		}
	}
	return n
}

// publish shows the walk in the Web UI: the current details always, the search attributes
// when they changed (each upsert is a history event).
func (r *rollout) publish() {
	p := r.progress()
	verb, target := "updating to", r.in.ToDefinitionID
	if r.phase.back() {
		verb, target = "rolling back to", r.in.FromDefinitionID
	}
	details := fmt.Sprintf("**%s** %s `%s`: index %d/%d, %d updated, given up %v, in flight %v",
		p.State, verb, target, p.CurrentIndex, p.Instances, r.updatedCount(), p.GivenUp, p.InFlight)
	if r.runInFlight() {
		way := fmt.Sprintf("forward from index %d", p.CurrentIndex)
		if r.phase.back() {
			way = "back down the replaced indices"
		}
		details += fmt.Sprintf("; an index run (WalkRun) walks %s, up to %d at once: its heartbeat details show the indices in flight", way, r.runLimit())
	}
	if f := r.walked.Failure; f != nil {
		details += "\n\n" + failureText(f)
		if r.walked.Reverting {
			details += fmt.Sprintf("; reverting to `%s`", r.in.FromDefinitionID)
		}
	}
	if f := r.walked.RevertFailure; f != nil {
		details += "\n\nthe revert failed in turn, paused for a human: " + failureText(f)
	}
	details += r.gateText()
	workflow.SetCurrentDetails(r.ctx, details)
	// A run without RolloutPhase upserts only when its state or target changes, as every
	// run did before the phase was shown (and as its recorded history says).
	phase := r.rolloutPhase()
	same := r.shown == [2]string{p.State, r.in.ToDefinitionID}
	if !r.searchable || same && (!r.phased || r.shownPhase == phase || !r.phaseOnlyUpserts()) {
		return
	}
	r.shown = [2]string{p.State, r.in.ToDefinitionID}
	r.upsert(p.State, phase)
}

// phaseOnlyUpserts says whether the run upserts a change of its phase alone, its state and
// target as they were: a canary step's hold and its end (without canary steps the phase
// follows the state). A worker from before RolloutPhase upserted no such change, and during
// an upgrade it may walk part of a run that an upgraded API started with RolloutPhase: a
// worker of this version replaying that history must not issue upserts it lacks. So the run
// asks workflow.GetVersion, once, at its first such change (a marker and an upsert of
// TemporalChangeVersion, in runs with canary steps only): on a history without the marker
// the run shows its phase only with its state, as that worker did.
func (r *rollout) phaseOnlyUpserts() bool {
	return workflow.GetVersion(r.ctx, "phase-only-upserts", workflow.DefaultVersion, 1) == 1
}

// rolloutPhase is where the rollout stands in the contract's words, as its row says
// (db's rolloutRow.model): the canary phase while it walks forward with canary steps, else
// its state's (model.RolloutPhaseOf).
func (r *rollout) rolloutPhase() string {
	if p := r.recordedPhase(); p != "" {
		return p
	}
	return model.RolloutPhaseOf(r.phase.state())
}

// upsert shows the rollout's search attributes: its state, and its phase in a run that
// shows it (r.phased).
func (r *rollout) upsert(state, phase string) {
	if !r.searchable {
		return
	}
	attrs := []temporal.SearchAttributeUpdate{
		SearchAttrProcessGUID.ValueSet(r.in.ProcessGUID),
		SearchAttrDomain.ValueSet(r.in.Domain),
		SearchAttrFromDefinition.ValueSet(r.in.FromDefinitionID),
		SearchAttrToDefinition.ValueSet(r.in.ToDefinitionID),
		SearchAttrRolloutState.ValueSet(state),
	}
	if r.phased {
		attrs = append(attrs, SearchAttrRolloutPhase.ValueSet(phase))
		r.shownPhase = phase
	}
	if err := workflow.UpsertTypedSearchAttributes(r.ctx, attrs...); err != nil {
		workflow.GetLogger(r.ctx).Warn("upsert search attributes", "error", err)
	}
}

// unusedDefinitions lists defs once each, without keep and the empty id: the definitions a
// rollout's end prunes.
func unusedDefinitions(keep string, defs []string) []string {
	var out []string
	for _, d := range defs {
		if d != "" && d != keep && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// prune retires the definitions the LRP no longer runs (seed 000), a local activity each (a
// legacy run's end). One that still has instances stopping stays, and the converger prunes
// it later, so failures only log.
func (r *rollout) prune(defs []string) {
	for _, d := range defs {
		var out activities.PruneDefinitionOutput
		if err := r.local(r.ctx, activities.PruneDefinitionInput{ProcessGUID: r.in.ProcessGUID, DefinitionID: d}, acts.PruneDefinition, &out); err != nil {
			workflow.GetLogger(r.ctx).Warn("prune definition", "definition_id", d, "error", err)
		}
	}
}

// finish ends the rollout row in a final state and returns the workflow's output.
func (r *rollout) finish(state, reason string) (RolloutOutput, error) {
	err := r.local(r.ctx, activities.FinishRolloutInput{RolloutID: r.in.RolloutID, State: state, Reason: reason}, acts.FinishRollout, nil)
	if err != nil && !isNotFound(err) {
		return RolloutOutput{}, err
	}
	return r.ended(state, reason), nil
}

// ended shows the rollout's end in the Web UI and returns the workflow's output.
func (r *rollout) ended(state, reason string) RolloutOutput {
	workflow.SetCurrentDetails(r.ctx, fmt.Sprintf("**%s** %s → `%s` %s", state, r.in.FromDefinitionID, r.in.ToDefinitionID, reason))
	r.upsert(state, model.RolloutPhaseOf(state))
	r.shown = [2]string{state, r.in.ToDefinitionID}
	return RolloutOutput{RolloutID: r.in.RolloutID, State: state, Reason: reason,
		Updated: r.walked.Updated, GivenUp: r.walked.GivenUp}
}

// failOrGone ends the rollout after an activity failed for good: as failed with "the LRP was
// removed" when that is why, else with the error, which the workflow also returns so that
// Temporal shows it. A not-found may also mean a definition was pruned under the walk, so
// the LRP's existence is checked.
func (r *rollout) failOrGone(err error) (RolloutOutput, error) {
	if isNotFound(err) {
		if load, lerr := r.load(); lerr == nil && !load.Exists {
			return r.finish(model.RolloutFailed, "the LRP was removed")
		}
	}
	if err == nil {
		err = temporal.NewNonRetryableApplicationError("the walk stopped without a cause", string(model.ErrUnknown), nil)
	}
	return r.fail(err)
}

func (r *rollout) fail(err error) (RolloutOutput, error) {
	if _, ferr := r.finish(model.RolloutFailed, err.Error()); ferr != nil {
		workflow.GetLogger(r.ctx).Error("finish failed rollout", "error", ferr)
	}
	return RolloutOutput{}, err
}

// recordedPhase is the phase the row keeps beside its state (empty: the state's): the gate's
// while it holds the walk, else the canary phase.
func (r *rollout) recordedPhase() string {
	if p := r.gatePhase(); p != "" {
		return p
	}
	return r.canaryPhase()
}
