package activities

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
)

// WalkRunInput hands a stretch of a walk to one activity (an index run, db/rollout_run.go).
// The workflow decides where it starts, which way it goes, the health gate and the deadline;
// the run walks up from From to the LRP's last index (or, given Indices, walks those) with up
// to InFlight indices at once, until it is done, MaxSteps indices are started, or the
// workflow drains it (a pause) or stops it (a signal).
type WalkRunInput struct {
	RolloutID    string `json:"rollout_id"`
	ProcessGUID  string `json:"process_guid"`
	DefinitionID string `json:"definition_id"`
	// Fence is what OpenRun answered: the run holds the rollout with it.
	Fence int64 `json:"fence"`
	From  int32 `json:"from"`
	// Before are the indices the walk updated before this run (for the row's count).
	Before []int32 `json:"before,omitempty"`
	// Healthy says an instance of the definition has run. Until one does, no deadline
	// applies and only one index is in flight (seed 000's failing definition waits at its
	// first index for good, every old instance kept).
	Healthy bool `json:"healthy,omitempty"`
	// Deadline is how long an index of a healthy definition may take to run (0: no deadline);
	// DeadlineAlways applies it before the definition is healthy too (a failure policy).
	Deadline       time.Duration `json:"deadline"`
	DeadlineAlways bool          `json:"deadline_always,omitempty"`
	// MaxSteps bounds the indices the run starts, as the workflow's history budget and the
	// canary step's count do.
	MaxSteps int `json:"max_steps"`
	// RunID names the workflow run, for the rollout row.
	RunID string `json:"run_id,omitempty"`
	// Failures and MaxCrashes are the rollout's failure policy (AwaitRunningInput): with it,
	// the run ends at the first index it gives up — the indices still in flight then retire
	// their new instance (WalkRunOutput.Interrupted) — so that the workflow decides what the
	// failure means (revert, pause, or walk on).
	Failures   bool  `json:"failures,omitempty"`
	MaxCrashes int32 `json:"max_crashes,omitempty"`
	// MinReady is AwaitRunningInput.MinReady for every index of the run.
	MinReady time.Duration `json:"min_ready,omitempty"`
	// Indices, when set, are the indices to walk, in this order (a walk back: the replaced
	// indices, highest first); without them the run walks up from From.
	Indices []int32 `json:"indices,omitempty"`
	// InFlight is how many indices may be in flight at once (0: one, as every run before it
	// walked); the workflow changes it while the run goes on (SetRunLimit).
	InFlight int `json:"in_flight,omitempty"`
	// Back says the run walks back to the definition a cancel or a revert returns to: the
	// row counts the indices it walks back, and what it gives up is the revert's failure.
	Back bool `json:"back,omitempty"`
}

// WalkRunOutput is what a run did, over all its attempts.
type WalkRunOutput struct {
	// Fenced says the run was stopped before this attempt could act: nothing else is set.
	Fenced bool `json:"fenced,omitempty"`
	// Updated and GivenUp are the indices the run decided, as db.RunState.
	Updated []int32 `json:"updated,omitempty"`
	GivenUp []int32 `json:"given_up,omitempty"`
	// Next is the first index a forward walk still has to do: the LRP's count when it walked
	// to the end, less when MaxSteps, a drain or a failure ended it.
	Next int32 `json:"next"`
	// Instances is the LRP's count as the run last read it.
	Instances int32 `json:"instances,omitempty"`
	// Failure is why the index the run ended at was given up (WalkRunInput.Failures).
	Failure *model.RolloutFailure `json:"failure,omitempty"`
	// Interrupted are the indices that were in flight when the run ended at a failure: the
	// definition's instance there retired undecided, the one it replaced still serving.
	Interrupted []int32 `json:"interrupted,omitempty"`
	// Beyond are indices of WalkRunInput.Indices the LRP was scaled below: nothing is left
	// to walk there.
	Beyond []int32 `json:"beyond,omitempty"`
}

// OpenRunOutput is the fence of a new index run.
type OpenRunOutput struct {
	Fence int64 `json:"fence"`
}

// StopRunOutput is what a stopped index run did: InFlight are the indices it left desired
// and undecided (retired by StopRunRetiring), Index the lowest of them, -1 for none.
type StopRunOutput struct {
	Updated  []int32 `json:"updated,omitempty"`
	GivenUp  []int32 `json:"given_up,omitempty"`
	Index    int32   `json:"index"`
	InFlight []int32 `json:"in_flight,omitempty"`
}

// StopRunRetiringInput names the run to stop and the definition it desired.
type StopRunRetiringInput struct {
	RolloutID    string `json:"rollout_id"`
	ProcessGUID  string `json:"process_guid"`
	DefinitionID string `json:"definition_id"`
}

// SetRunLimitInput is a run's new limit of indices in flight (0: drain).
type SetRunLimitInput struct {
	RolloutID string `json:"rollout_id"`
	Fence     int64  `json:"fence"`
	Limit     int32  `json:"limit"`
}

// runDetails are WalkRun's heartbeat: where the run is (the Web UI shows them for the
// pending activity), and since when each index in flight has been waited for, so that a
// retried attempt keeps their deadlines. Index and Since are the lowest index in flight.
type runDetails struct {
	Index    int32         `json:"index"`
	Since    int64         `json:"since"`
	State    string        `json:"state,omitempty"`
	Updated  int           `json:"updated"`
	GivenUp  int           `json:"given_up"`
	InFlight []indexDetail `json:"in_flight,omitempty"`
}

// indexDetail is one index in flight in runDetails.
type indexDetail struct {
	Index int32  `json:"index"`
	Since int64  `json:"since"`
	State string `json:"state,omitempty"`
}

// OpenRun opens an index run of the rollout (fencing out any earlier one) and returns its fence.
func (r *Rollouts) OpenRun(ctx context.Context, in RolloutIDInput) (OpenRunOutput, error) {
	fence, err := r.Store.OpenRun(ctx, in.RolloutID)
	return OpenRunOutput{Fence: fence}, nonRetryable(err)
}

// StopRun fences out the rollout's index run and returns what it did: once it has returned,
// the run changes nothing more.
func (r *Rollouts) StopRun(ctx context.Context, in RolloutIDInput) (StopRunOutput, error) {
	st, err := r.Store.StopRun(ctx, in.RolloutID)
	return StopRunOutput{Updated: st.Updated, GivenUp: st.GivenUp, Index: st.Index, InFlight: st.InFlight}, nonRetryable(err)
}

// StopRunRetiring fences out the rollout's index run, retires the definition's instance at
// every index it left in flight (the instance there before keeps serving) and asks the cells
// to stop what it retired; it returns what the run did.
func (r *Rollouts) StopRunRetiring(ctx context.Context, in StopRunRetiringInput) (StopRunOutput, error) {
	st, toStop, err := r.Store.StopRunRetiring(ctx, in.RolloutID, in.ProcessGUID, in.DefinitionID)
	if err != nil {
		return StopRunOutput{}, nonRetryable(err)
	}
	r.stop(ctx, toStop)
	return StopRunOutput{Updated: st.Updated, GivenUp: st.GivenUp, Index: st.Index, InFlight: st.InFlight}, nil
}

// SetRunLimit sets how many indices the run may have in flight (0 drains it).
func (r *Rollouts) SetRunLimit(ctx context.Context, in SetRunLimitInput) error {
	return nonRetryable(r.Store.SetRunLimit(ctx, in.RolloutID, in.Fence, in.Limit))
}

// WalkRun walks indices as the stepwise walk does — desire the definition's instance, wait
// until it is RUNNING and ready, retire the others there — with up to the run's limit of
// indices in flight, one transaction per decision and no Temporal round trip between
// indices: an index's decision and the next indices' desires commit together
// (db.Store.AdvanceRun). An index that does not run within the deadline (once the definition
// is healthy) is given up and its instance retired; an index the LRP was scaled below is
// left. Every write is fenced: a run the workflow stopped (a signal) or an attempt a later
// one took over ends without another write, and a retried attempt resumes where the last one
// was. A limit of 0 (a pause) lets the indices in flight finish and starts no other.
// Progress shows on the rollout row (with a rollout_changed event per decision) and in the
// heartbeat details.
func (r *Rollouts) WalkRun(ctx context.Context, in WalkRunInput) (WalkRunOutput, error) {
	h := db.RunHold{RolloutID: in.RolloutID, Fence: in.Fence, Attempt: activity.GetInfo(ctx).Attempt}
	run, err := r.Store.TakeRun(ctx, h)
	if errors.Is(err, db.ErrRunFenced) {
		return WalkRunOutput{Fenced: true}, nil
	}
	if err != nil {
		return WalkRunOutput{}, nonRetryable(err)
	}
	w := &runWalk{r: r, in: in, hold: h, run: run, healthy: in.Healthy || len(run.Updated) > 0,
		waits: map[int32]*indexWait{}, results: make(chan waitResult)}
	err = w.walk(ctx)
	w.stops.Wait()
	if errors.Is(err, db.ErrRunFenced) {
		err = nil // stopped by the workflow: it learns what the run did from StopRun
	}
	return w.output(), nonRetryable(err)
}

// stopTimeout bounds the stop requests of an index: a cell that does not answer stops its
// retiring instances at its own next reconciliation.
const stopTimeout = 10 * time.Second

// runWalk is one attempt of an index run.
type runWalk struct {
	r       *Rollouts
	in      WalkRunInput
	hold    db.RunHold
	run     db.RunState
	healthy bool
	// cursor is the next index a forward run starts; queue, the indices of a run given
	// Indices it has not started.
	cursor int32
	queue  []int32
	// instances is the LRP's count as the last step read it.
	instances int32
	// waits are the waits of the indices in flight; they send their outcome on results.
	// Only the walk's own goroutine touches waits; mu guards each wait's state, which its
	// goroutine writes and the heartbeat reads.
	waits   map[int32]*indexWait
	results chan waitResult
	waiting sync.WaitGroup
	mu      sync.Mutex
	// stops are the stop requests on their way to the cells: sent while the run walks on,
	// waited for before it returns.
	stops sync.WaitGroup
	// failure is why the run gave its last index up (WalkRunInput.Failures); interrupted and
	// beyond are WalkRunOutput's.
	failure     *model.RolloutFailure
	interrupted []int32
	beyond      []int32
	// rewait are the indices the last step found no longer serving (db.RunAdvanced.Rewait).
	rewait []int32
}

// indexWait is the wait of one index in flight.
type indexWait struct {
	since  time.Time
	state  string
	cancel context.CancelFunc
}

// waitResult is how the wait of an index ended.
type waitResult struct {
	index int32
	out   AwaitRunningOutput
	err   error
}

func (w *runWalk) output() WalkRunOutput {
	next := w.cursor
	if len(w.interrupted) > 0 {
		next = min(next, slices.Min(w.interrupted))
	}
	return WalkRunOutput{Updated: w.run.Updated, GivenUp: w.run.GivenUp, Next: next, Instances: w.instances,
		Failure: w.failure, Interrupted: w.interrupted, Beyond: w.beyond}
}

// started counts the indices the run has started: decided or in flight.
func (w *runWalk) started() int { return len(w.run.Updated) + len(w.run.GivenUp) + len(w.run.InFlight) }

// walk resumes where the run is (an earlier attempt's indices in flight, or after its last
// decision) and walks on until it is done, drained, at MaxSteps, at an error or fenced.
func (w *runWalk) walk(ctx context.Context) error {
	decided := slices.Concat(w.run.Updated, w.run.GivenUp)
	w.cursor = w.in.From
	for _, i := range slices.Concat(decided, w.run.InFlight) {
		w.cursor = max(w.cursor, i+1)
	}
	for _, i := range w.in.Indices {
		if !slices.Contains(decided, i) && !slices.Contains(w.run.InFlight, i) {
			w.queue = append(w.queue, i)
		}
	}
	if w.in.Failures && len(w.run.GivenUp) > 0 {
		// An earlier attempt gave an index up and ended there, its worker lost before the
		// workflow heard why: the run ends where it did, with what is known. The indices it
		// interrupted are the gaps below the highest it decided (an index above every one
		// started is the only kind a run leaves unstarted).
		i := slices.Max(w.run.GivenUp)
		w.cursor = slices.Max(decided) + 1
		if w.in.Indices == nil {
			for x := w.in.From; x < w.cursor; x++ {
				if !slices.Contains(decided, x) {
					w.interrupted = append(w.interrupted, x)
				}
			}
		}
		w.failure = &model.RolloutFailure{Reason: model.FailureIndexDeadline, Index: &i, DefinitionID: w.in.DefinitionID,
			Kind: model.FailureApp, Detail: "given up by an earlier attempt of the index run, whose worker was lost"}
		return nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		w.waiting.Wait()
	}()
	since := w.resumedSince(ctx)
	// The indices an earlier attempt left in flight are desired again (a desire that finds
	// the instance changes nothing; one its cell removed meanwhile is back) and waited for,
	// with the first new ones, in one step. The LRP's count is unknown until that step reads
	// it: it leaves out what is beyond.
	w.instances = math.MaxInt32
	defer func() {
		if w.instances == math.MaxInt32 {
			w.instances = 0 // no step read it
		}
	}()
	first := slices.Concat(w.run.InFlight, w.pick(w.room(0)))
	if len(first) == 0 {
		return nil // nothing to resume, nothing to start (drained, or MaxSteps reached)
	}
	if err := w.advanceAndWait(wctx, nil, first, nil, since); err != nil {
		return err
	}
	tick := time.NewTicker(min(w.r.tick(), heartbeatAfter))
	defer tick.Stop()
	for len(w.run.InFlight) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case res := <-w.results:
			// Waits that ended together are decided together: one transaction for them all.
			batch := []waitResult{res}
			for more := true; more; {
				select {
				case r := <-w.results:
					batch = append(batch, r)
				default:
					more = false
				}
			}
			if err := w.decide(wctx, batch); err != nil || w.failure != nil {
				return err
			}
		case <-tick.C:
			w.heartbeat(ctx)
			held, limit, err := w.r.Store.HoldsRun(ctx, w.hold)
			if err != nil {
				return err
			}
			if !held {
				return db.ErrRunFenced
			}
			if limit != w.run.Limit {
				w.run.Limit = limit // a new pace: more may start now
				if err := w.startMore(wctx); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// resumedSince is since when each index an earlier attempt left in flight has been waited
// for, from its heartbeat (now for an index it does not name).
func (w *runWalk) resumedSince(ctx context.Context) map[int32]time.Time {
	since := map[int32]time.Time{}
	now := time.Now()
	for _, i := range w.run.InFlight {
		since[i] = now
	}
	if !activity.HasHeartbeatDetails(ctx) {
		return since
	}
	var prev runDetails
	if err := activity.GetHeartbeatDetails(ctx, &prev); err != nil {
		return since
	}
	for _, d := range append(prev.InFlight, indexDetail{Index: prev.Index, Since: prev.Since}) {
		if _, ok := since[d.Index]; ok && d.Since != 0 {
			since[d.Index] = time.Unix(0, d.Since)
		}
	}
	return since
}

// room is how many more indices may start: the run's limit (the workflow's, else its input's;
// one until the definition is healthy) less those in flight, plus freed that are about to be
// decided.
func (w *runWalk) room(freed int) int {
	limit := max(w.in.InFlight, 1)
	if w.run.Limit >= 0 {
		limit = int(w.run.Limit)
	}
	if !w.healthy {
		limit = min(limit, 1)
	}
	return limit - len(w.run.InFlight) + freed
}

// pick takes the indices to start next, as many as room allows, up to MaxSteps started.
func (w *runWalk) pick(room int) []int32 {
	var next []int32
	budget := w.in.MaxSteps - w.started()
	for room > 0 && budget > 0 {
		if w.in.Indices != nil {
			if len(w.queue) == 0 {
				break
			}
			next, w.queue = append(next, w.queue[0]), w.queue[1:]
		} else {
			if w.cursor >= w.instances {
				break
			}
			i := w.cursor
			w.cursor++
			if slices.Contains(w.run.InFlight, i) {
				// In flight still: the cursor came back below it (the LRP scaled down while
				// it waited, then up again).
				continue
			}
			next = append(next, i)
		}
		room--
		budget--
	}
	return next
}

// startMore starts as many indices as the run has room for and waits for them.
func (w *runWalk) startMore(ctx context.Context) error {
	next := w.pick(w.room(0))
	if len(next) == 0 {
		return nil
	}
	return w.advanceAndWait(ctx, nil, next, nil, nil)
}

// decide ends the waits of a batch of indices in one transaction, which also starts the next
// indices: an index whose cell removed its instance is desired again and waited for anew;
// the others are decided — updated, given up or scaled away. At an index given up with a
// failure policy the run ends, its other indices in flight interrupted.
func (w *runWalk) decide(ctx context.Context, batch []waitResult) error {
	var decided []db.RunDecision
	var again []int32
	since := map[int32]time.Time{}
	for _, res := range batch {
		i, out := res.index, res.out
		wt := w.waits[i]
		if wt == nil {
			continue // a wait that was stopped meanwhile: its index is decided elsewhere
		}
		since[i] = wt.since
		delete(w.waits, i)
		if res.err != nil {
			return res.err
		}
		if out.Missing {
			// Its cell removed it: desire it again (fenced, so an abandoned run cannot). With a
			// failure policy that is a platform failure, whose time does not count.
			if w.in.Failures {
				since[i] = time.Now()
			}
			again = append(again, i)
			continue
		}
		outcome := model.StepUpdated
		switch {
		case out.Beyond:
			outcome = model.StepScaledAway
			if w.in.Indices != nil {
				w.beyond = append(w.beyond, i)
			}
		case out.GivenUp:
			outcome = model.StepGivenUp
			w.r.log().Warn("gave up an index", zap.String("process_guid", w.in.ProcessGUID),
				zap.String("definition_id", w.in.DefinitionID), zap.Int32("index", i), zap.String("reason", out.Reason))
			if w.in.Failures && w.failure == nil {
				w.failure = out.Failure
			}
		default:
			w.healthy = true // the gate opens: the next indices start at the run's full limit
		}
		w.r.waitEnded(out, since[i].UnixNano())
		decided = append(decided, db.RunDecision{Index: i, Outcome: outcome})
	}
	if w.failure != nil {
		// The run ends here: the workflow decides what the failure means. The indices still
		// in flight retire their new instance with the decision; their old one keeps serving.
		w.interrupted = slices.DeleteFunc(slices.Clone(w.run.InFlight), func(x int32) bool {
			return slices.ContainsFunc(decided, func(d db.RunDecision) bool { return d.Index == x })
		})
		for _, x := range w.interrupted {
			if wt := w.waits[x]; wt != nil {
				wt.cancel()
			}
		}
		if err := w.advance(ctx, decided, nil, w.interrupted); err != nil {
			return err
		}
		if len(w.rewait) > 0 {
			// Seen serving, no longer: interrupted too.
			w.interrupted = append(w.interrupted, w.rewait...)
			return w.advance(ctx, nil, nil, w.rewait)
		}
		return nil
	}
	next := w.pick(w.room(len(decided)))
	if err := w.advanceAndWait(ctx, decided, slices.Concat(again, next), nil, since); err != nil {
		return err
	}
	return nil
}

// advanceAndWait advances the run and waits for the indices it started (since when each has
// been waited for: since, else now).
func (w *runWalk) advanceAndWait(ctx context.Context, decided []db.RunDecision, next, interrupt []int32, since map[int32]time.Time) error {
	if err := w.advance(ctx, decided, next, interrupt); err != nil {
		return err
	}
	for _, i := range w.rewait {
		w.startWait(ctx, i, since[i]) // seen serving, no longer: waited for again
	}
	now := time.Now()
	for _, i := range next {
		if slices.Contains(w.run.InFlight, i) {
			from, ok := since[i]
			if !ok {
				from = now
			}
			w.startWait(ctx, i, from)
		} else if w.in.Indices != nil {
			w.beyond = append(w.beyond, i) // scaled below it: nothing to walk there
		}
	}
	w.heartbeat(ctx)
	return nil
}

// advance decides indices, desires the indices next and retires the undecided interrupt in
// one transaction, then asks the cells to stop what it retired.
func (w *runWalk) advance(ctx context.Context, decided []db.RunDecision, next, interrupt []int32) error {
	adv, err := w.r.Store.AdvanceRun(ctx, w.hold, db.RunAdvance{ProcessGUID: w.in.ProcessGUID, DefinitionID: w.in.DefinitionID,
		Decided: decided, Next: next, Interrupt: interrupt, Back: w.in.Back, Before: w.in.Before, RunID: w.in.RunID})
	if err != nil {
		return err
	}
	if !adv.Exists {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("LRP %q was removed", w.in.ProcessGUID), string(model.ErrResourceNotFound), nil)
	}
	w.run, w.instances, w.rewait = adv.Run, adv.Instances, adv.Rewait
	// Indices the transaction did not take below the count were over the run's limit as the
	// row says it now (a pause, a new pace): they start later, in their turn.
	var over []int32
	for _, i := range next {
		if i < w.instances && !slices.Contains(w.run.InFlight, i) {
			over = append(over, i)
		}
	}
	if len(over) > 0 {
		if w.in.Indices != nil {
			w.queue = append(over, w.queue...)
		} else {
			w.cursor = min(w.cursor, slices.Min(over))
		}
	}
	w.cursor = min(w.cursor, max(w.instances, w.in.From))
	if len(adv.ToStop) > 0 {
		// The retirement is committed; the cells are told while the run goes on (a failed
		// request is logged, and the cells stop retiring instances on their own at their next
		// reconciliation).
		w.stops.Add(1)
		go func() {
			defer w.stops.Done()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
			defer cancel()
			w.r.stop(sctx, adv.ToStop)
		}()
	}
	return nil
}

// startWait waits for the instance at index i as AwaitRunning does (its deadline counted
// from since), in a goroutine of its own that sends the outcome on w.results.
func (w *runWalk) startWait(ctx context.Context, i int32, since time.Time) {
	wctx, cancel := context.WithCancel(ctx)
	wt := &indexWait{since: since, cancel: cancel}
	w.waits[i] = wt
	in := AwaitRunningInput{ProcessGUID: w.in.ProcessGUID, DefinitionID: w.in.DefinitionID, Index: i,
		Failures: w.in.Failures, MaxCrashes: w.in.MaxCrashes, MinReady: w.in.MinReady}
	if w.healthy || w.in.DeadlineAlways {
		in.Deadline = w.in.Deadline
	}
	w.waiting.Add(1)
	go func() {
		defer w.waiting.Done()
		defer cancel()
		changes, stop := w.r.changes(wctx, w.in.ProcessGUID)
		defer stop()
		out, err := w.r.await(wctx, in, since, changes, func(state string, _ bool) (time.Duration, error) {
			w.mu.Lock()
			wt.state = state
			w.mu.Unlock()
			return 0, nil
		})
		select {
		case w.results <- waitResult{index: i, out: out, err: err}:
		case <-wctx.Done():
		}
	}()
}

// heartbeat records where the run is: every index in flight, since when and in what state.
func (w *runWalk) heartbeat(ctx context.Context) {
	d := runDetails{Index: -1, Updated: len(w.run.Updated), GivenUp: len(w.run.GivenUp)}
	w.mu.Lock()
	for _, i := range w.run.InFlight {
		if wt := w.waits[i]; wt != nil {
			d.InFlight = append(d.InFlight, indexDetail{Index: i, Since: wt.since.UnixNano(), State: wt.state})
		}
	}
	w.mu.Unlock()
	if len(d.InFlight) > 0 {
		d.Index, d.Since, d.State = d.InFlight[0].Index, d.InFlight[0].Since, d.InFlight[0].State
	}
	activity.RecordHeartbeat(ctx, d)
}
