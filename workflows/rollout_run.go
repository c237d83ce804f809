package workflows

import (
	"slices"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Index runs (RolloutInput.Runs): the forward walk hands the indices from NextIndex up to one
// activity, WalkRun, which walks them one after the other with a transaction per index and
// no Temporal round trip between them — an index's workflow task and activity task cost more
// than the rest of its step on the dev server (docs/BENCHMARKS.md). The workflow still
// decides: where the run starts, the health gate (no deadline until the target has run) and
// the deadline, and every signal stops the run before it acts. The run is opened with a
// fence (OpenRun) and stopped by moving it (StopRun): once StopRun has returned the run
// changes nothing, and its answer is what the run did. So a cancel, supersede or rollback
// acts within the index the run was at, as it does on a step; a pause lets that index finish
// as a step and starts no other. A killed worker's run is retried by Temporal after its
// heartbeat timeout and resumes where the row says it was.

// inRuns says whether the walk's next index goes to an index run: every one with
// WalkByRuns; before it, the forward walk's at a pace of one.
func (r *rollout) inRuns() bool {
	if r.in.Runs && r.in.MaxInFlight == 1 && !r.phase.back() {
		return true
	}
	return r.oneEngine()
}

// oneEngine says whether the run walks by WalkByRuns. A worker of the version before ignores
// the field, and a rollout started by a newer API may be walked by one during a deploy: the
// run asks workflow.GetVersion the first time the two versions would issue different
// commands (a walk back, a pace above one, a pause or a new pace reaching a run), so that a
// history such a worker began replays here as it began — and goes on by the one engine only
// where the history has the marker. A plain forward walk at a pace of one never asks: both
// versions walk it the same. The answer is kept in the input, for the runs that continue
// this one.
func (r *rollout) oneEngine() bool {
	if !r.in.WalkByRuns || r.engineAsked {
		return r.in.WalkByRuns
	}
	r.engineAsked = true
	r.in.WalkByRuns = workflow.GetVersion(r.ctx, "walk-by-runs", workflow.DefaultVersion, 1) == 1
	return r.in.WalkByRuns
}

// startRun starts an index run from index i: forward up from it, or (walking back) down the
// replaced indices.
func (r *rollout) startRun(i int32) {
	s := &step{index: i, def: r.in.ToDefinitionID, run: true, rolloutID: r.in.RolloutID}
	if r.phase.back() && r.oneEngine() {
		s.back, s.def = true, r.in.FromDefinitionID
	}
	r.counted, r.ranToEnd = false, false
	sctx, cancel := workflow.WithCancel(r.ctx)
	s.cancel = cancel
	r.inFlight = append(r.inFlight, s)
	workflow.Go(sctx, func(ctx workflow.Context) {
		res := r.walkRun(ctx, s)
		res.s = s
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		r.done.Send(dctx, res)
	})
}

// runOptions: a run may wait as long as a step's AwaitRunning (a failing definition's first
// index waits for good); its heartbeat notices a dead worker.
var runOptions = awaitOptions

// walkRun opens a run, lets WalkRun walk, and, when a signal interrupts it (ctx is the
// step's), stops it and deals with the indices it left undecided.
func (r *rollout) walkRun(ctx workflow.Context, s *step) stepResult {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	id := activities.RolloutIDInput{RolloutID: s.rolloutID}
	var open activities.OpenRunOutput
	if err := r.local(dctx, id, acts.OpenRun, &open); err != nil {
		return failed(err)
	}
	in := activities.WalkRunInput{RolloutID: s.rolloutID, ProcessGUID: r.in.ProcessGUID, DefinitionID: s.def,
		Fence: open.Fence, From: s.index, Before: slices.Clone(r.walked.Updated), Healthy: r.walked.Healthy || r.failures(),
		Deadline: r.in.IndexDeadline, MaxSteps: min(r.in.ContinueAsNewEvery-r.steps, r.stepLimit(s.index)),
		RunID: workflow.GetInfo(ctx).WorkflowExecution.RunID}
	in.Failures, in.MaxCrashes = r.awaitFailures()
	in.MinReady = r.in.MinReady
	if r.in.WalkByRuns {
		s.fence, s.limit = open.Fence, r.runLimit()
		if s.limit == 0 && r.oneEngine() {
			// Paused while it opened: nothing starts until a resume starts another run.
			return stepResult{out: outUpdated, run: &activities.WalkRunOutput{Next: s.index}}
		}
		r.runInput(&in, s)
	}
	var out activities.WalkRunOutput
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, runOptions), acts.WalkRun, in).Get(ctx, &out)
	switch {
	case ctx.Err() != nil:
		return r.stopRun(dctx, s)
	case err != nil:
		return failed(err)
	case out.Fenced:
		return failed(temporal.NewNonRetryableApplicationError("the index run was stopped before it started", string(model.ErrUnknown), nil))
	}
	return stepResult{out: outUpdated, run: &out}
}

// runInput tunes a run of the one walk engine (WalkByRuns): its pace, its direction and, for
// a walk back, the replaced indices from the highest down. Until the target has run, one
// index is in flight (the gate: Healthy); with a failure policy the deadline counts from the
// first index (DeadlineAlways). A walk back has no min_ready (it restores service) and a
// deadline only with a failure policy (one that cannot start pauses: onRevertFailed).
func (r *rollout) runInput(in *activities.WalkRunInput, s *step) {
	in.InFlight = s.limit
	in.Healthy, in.DeadlineAlways = r.walked.Healthy, r.failures()
	if !s.back {
		return
	}
	in.Back, in.Healthy, in.MinReady, in.MaxSteps = true, true, 0, r.in.ContinueAsNewEvery-r.steps
	if !r.failures() {
		in.Deadline = 0
	}
	in.Indices = slices.Clone(r.walked.Replaced)
	slices.Reverse(in.Indices)
}

// runLimit is how many indices a run may have in flight now: none while the walk is held.
func (r *rollout) runLimit() int {
	if r.held() {
		return 0
	}
	return r.in.MaxInFlight
}

// stopRun fences out the interrupted run s and returns what it did. The indices it left
// undecided are retired (the old instance at each, never retired, keeps serving), unless
// a pause stopped a run of the version before WalkByRuns: its one index then finishes as a
// step.
func (r *rollout) stopRun(ctx workflow.Context, s *step) stepResult {
	if r.oneEngine() {
		var st activities.StopRunOutput
		in := activities.StopRunRetiringInput{RolloutID: s.rolloutID, ProcessGUID: r.in.ProcessGUID, DefinitionID: s.def}
		if err := r.local(ctx, in, acts.StopRunRetiring, &st); err != nil {
			return failed(err)
		}
		run := &activities.WalkRunOutput{Updated: st.Updated, GivenUp: st.GivenUp, Next: s.index}
		if len(st.InFlight) > 0 {
			run.Next = slices.Min(st.InFlight)
		} else if decided := slices.Concat(st.Updated, st.GivenUp); len(decided) > 0 {
			run.Next = slices.Max(decided) + 1
		}
		return stepResult{out: outInterrupted, run: run}
	}
	var st activities.StopRunOutput
	if err := r.local(ctx, activities.RolloutIDInput{RolloutID: s.rolloutID}, acts.StopRun, &st); err != nil {
		return failed(err)
	}
	run := &activities.WalkRunOutput{Updated: st.Updated, GivenUp: st.GivenUp, Next: s.index}
	if decided := slices.Concat(st.Updated, st.GivenUp); len(decided) > 0 {
		run.Next = slices.Max(decided) + 1
	}
	if st.Index < 0 {
		return stepResult{out: outInterrupted, run: run}
	}
	in := activities.InstanceInput{ProcessGUID: r.in.ProcessGUID, DefinitionID: s.def, Index: st.Index}
	if !s.pausing || r.stop != stopNone {
		res := r.retire(ctx, in, outInterrupted, "")
		res.run = run
		return res
	}
	// Paused: the index in flight finishes its step, which a later signal may interrupt.
	var deadline time.Duration
	if r.walked.Healthy || len(st.Updated) > 0 || r.failures() {
		deadline = r.in.IndexDeadline
	}
	tctx, cancel := workflow.WithCancel(ctx)
	s.cancel = cancel
	tail := r.runStep(tctx, &step{index: st.Index, def: s.def}, deadline)
	switch tail.out {
	case outUpdated:
		run.Updated = insert(run.Updated, st.Index)
	case outGivenUp:
		run.GivenUp = insert(run.GivenUp, st.Index)
		run.Failure = tail.failure
	case outInterrupted:
		return stepResult{out: outInterrupted, run: run}
	case outGone, outError:
		tail.run = run
		return tail
	}
	run.Next = st.Index + 1
	return stepResult{out: outUpdated, run: run}
}

// runDone applies what a run did to the walk, as stepDone applies a step: the indices it
// updated were replaced (a cancel walks them back) and, on the current target, updated.
func (r *rollout) runDone(res stepResult) {
	s := res.s
	if s.back {
		r.backRunDone(res)
		return
	}
	if run := res.run; run != nil {
		current := s.def == r.in.ToDefinitionID
		for _, i := range run.Updated {
			r.walked.Replaced = insert(r.walked.Replaced, i)
			if current {
				r.walked.Updated = insert(r.walked.Updated, i)
				r.walked.Healthy = true
			}
		}
		if current {
			for _, i := range run.GivenUp {
				r.walked.GivenUp = insert(r.walked.GivenUp, i)
			}
			if r.failures() && len(run.GivenUp) > 0 {
				// With a failure policy a run ends at the index it gave up — or the indices,
				// when several waits ended together: each counts. The failure the run reports
				// names one; the others are told by their index.
				named := slices.Max(run.GivenUp)
				if f := run.Failure; f != nil && f.Index != nil {
					named = *f.Index
				}
				defer func() { // after the walk's position below; the named failure first
					r.onIndexFailed(named, s.def, run.Failure)
					for _, i := range run.GivenUp {
						if i != named {
							r.onIndexFailed(i, s.def, nil)
						}
					}
				}()
			}
		}
		r.steps += len(run.Updated) + len(run.GivenUp)
		// The forward walk goes on where the run ended: past the indices it decided, at the
		// one a signal stopped it before (which a pause even caught before it was desired).
		if current && s.rolloutID == r.in.RolloutID && !r.phase.back() {
			r.walked.NextIndex = run.Next
			if res.out == outUpdated && run.Instances > 0 {
				// The count the run last read: where it ended, unless it stopped early.
				r.instances, r.counted = run.Instances, true
				r.ranToEnd = run.Next >= run.Instances
			}
		}
	}
	if res.out == outGone || res.out == outError {
		r.abort(res.err)
	}
}

// backRunDone applies what a run walking back did: the indices it walked back are neither
// replaced nor updated any more, those the LRP was scaled below are left, and one it gave
// up (with a failure policy: the definition it returns to does not start) pauses the walk
// back with both failures shown.
func (r *rollout) backRunDone(res stepResult) {
	if run := res.run; run != nil {
		for _, i := range run.Updated {
			r.walked.Replaced = remove(r.walked.Replaced, i)
			r.walked.Updated = remove(r.walked.Updated, i)
		}
		for _, i := range run.Beyond {
			r.walked.Replaced = remove(r.walked.Replaced, i)
		}
		r.steps += len(run.Updated) + len(run.GivenUp)
		if r.failures() && len(run.GivenUp) > 0 {
			i := slices.Max(run.GivenUp)
			if f := run.Failure; f != nil && f.Index != nil {
				i = *f.Index
			}
			r.onRevertFailed(i, run.Failure)
		}
	}
	if res.out == outGone || res.out == outError {
		r.abort(res.err)
	}
}

// steerRuns tells the run in flight what the walk wants of it now (WalkByRuns): a pause
// drains it (limit 0: the indices in flight finish, no other starts, and it ends), a resume
// or set_pace gives it the pace (more start at once). A run stopped meanwhile ignores it.
// Runs of the version before are stopped instead (stopIndexRuns).
func (r *rollout) steerRuns() {
	want := r.runLimit()
	steer := slices.ContainsFunc(r.inFlight, func(s *step) bool { return s.run && s.fence != 0 && s.limit != want })
	if !steer && !r.held() && r.in.MaxInFlight == 1 {
		return // neither version has anything to do
	}
	if !r.oneEngine() {
		r.stopIndexRuns()
		return
	}
	for _, s := range r.inFlight {
		if !s.run || s.fence == 0 || s.limit == want {
			continue
		}
		s.limit = want
		in := activities.SetRunLimitInput{RolloutID: s.rolloutID, Fence: s.fence, Limit: int32(want)}
		if err := r.local(r.ctx, in, acts.SetRunLimit, nil); err != nil {
			r.abort(err)
		}
	}
}

// stopIndexRuns is how runs started before WalkByRuns are steered: replay only since
// 2026-11-27, it goes with the step path (rollout_walk.go start).
//
// stopIndexRuns stops the runs in flight once the walk is held, or its pace is no longer one
// (set_pace): the index each is at finishes as a step (stopRun), and the walk then goes on
// as the phase and the pace say — nothing until a resume, or steps side by side.
func (r *rollout) stopIndexRuns() {
	if !r.held() && r.in.MaxInFlight == 1 {
		return
	}
	for _, s := range r.inFlight {
		if s.run && !s.pausing {
			s.pausing = true
			s.cancel()
		}
	}
}

// runInFlight says whether an index run is under way: it writes the row's progress itself.
func (r *rollout) runInFlight() bool {
	return slices.ContainsFunc(r.inFlight, func(s *step) bool { return s.run })
}
