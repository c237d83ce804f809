package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/model"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Search attributes of rollout workflows, so operators find them in the Web UI (for example
// `RolloutState = "active"`). They must be registered on the server (the dev mode does so,
// see internal/temporaldev); the workflow upserts them only when its start carried them, so
// a server without them still runs rollouts.
var (
	SearchAttrProcessGUID    = temporal.NewSearchAttributeKeyKeyword("ProcessGuid")
	SearchAttrDomain         = temporal.NewSearchAttributeKeyKeyword("Domain")
	SearchAttrFromDefinition = temporal.NewSearchAttributeKeyKeyword("FromDefinition")
	SearchAttrToDefinition   = temporal.NewSearchAttributeKeyKeyword("ToDefinition")
	SearchAttrRolloutState   = temporal.NewSearchAttributeKeyKeyword("RolloutState")
	// SearchAttrRolloutPhase is the rollout's phase in the contract's words (model.Phase*,
	// ROLLOUTS-NEXT.md section 2), for fleet queries such as
	// `temporal workflow list --query "RolloutPhase='reverting'"`: upserted whenever it
	// changes (canary → awaiting_promotion → walking, paused, reverting) and at the end.
	//
	// Only a run whose start carried it upserts it (rollout.phased), for two reasons. A
	// replay compares an upsert command with its event by type alone, not by its attributes,
	// but the count and the order of commands must match: a run recorded before it existed
	// must not issue the upserts of phases that leave its state as it was (nor take a marker
	// for them, see rollout.phaseOnlyUpserts). And a server where it is not registered fails
	// the workflow task of any upsert naming it, again and again: a BBS upgraded before its
	// server registered it starts its rollouts without it (startRollout, on the server's
	// refusal), and they run as before, showing no phase.
	SearchAttrRolloutPhase = temporal.NewSearchAttributeKeyKeyword("RolloutPhase")
	// SearchAttrRolloutGroup names the rollout group of a member rollout's run, and of the
	// group's own workflow (ROLLOUTS-NEXT.md section 2): `RolloutGroup='cflinuxfs4-2026'`
	// lists a group and every member. Set at the start only; like RolloutPhase, a server
	// that does not know it gets the start without it.
	SearchAttrRolloutGroup = temporal.NewSearchAttributeKeyKeyword("RolloutGroup")
)

// startPhase is the phase a rollout starts in, as its run computes it (rollout.rolloutPhase)
// for a fresh start the row says is active: the start shows it, so the run need not upsert it.
func startPhase(in RolloutInput) string {
	if len(in.Canary) > 0 {
		return model.PhaseCanary
	}
	return model.PhaseWalking
}

// startAttributes are the search attributes a rollout's workflow starts with; phase says
// whether RolloutPhase is one of them.
func startAttributes(in RolloutInput, phase bool) temporal.SearchAttributes {
	attrs := []temporal.SearchAttributeUpdate{
		SearchAttrProcessGUID.ValueSet(in.ProcessGUID),
		SearchAttrDomain.ValueSet(in.Domain),
		SearchAttrFromDefinition.ValueSet(in.FromDefinitionID),
		SearchAttrToDefinition.ValueSet(in.ToDefinitionID),
		SearchAttrRolloutState.ValueSet(model.RolloutActive),
	}
	if phase {
		attrs = append(attrs, SearchAttrRolloutPhase.ValueSet(startPhase(in)))
		if in.Group != "" {
			attrs = append(attrs, SearchAttrRolloutGroup.ValueSet(in.Group))
		}
	}
	return temporal.NewSearchAttributes(attrs...)
}

// startRollout runs start (a start, or a signal-with-start, of the rollout's workflow) with
// RolloutPhase among the search attributes, and, should the server refuse that attribute as
// undefined (registered after the BBS was upgraded), once more without it: the run then shows
// no phase (see SearchAttrRolloutPhase).
func startRollout(taskQueue string, in RolloutInput, start func(client.StartWorkflowOptions) error) error {
	opts := rolloutStartOptions(taskQueue, in)
	err := start(opts)
	if undefinedAttribute(err, SearchAttrRolloutPhase.GetName()) || undefinedAttribute(err, SearchAttrRolloutGroup.GetName()) {
		opts.TypedSearchAttributes = startAttributes(in, false)
		err = start(opts)
	}
	return err
}

// undefinedAttribute says whether err is the server's refusal of the search attribute name:
// not registered ("Namespace default has no mapping defined for search attribute
// RolloutPhase" with SQL visibility, "search attribute RolloutPhase is not defined" with
// Elasticsearch), or registered with another type.
func undefinedAttribute(err error, name string) bool {
	var invalid *serviceerror.InvalidArgument
	return errors.As(err, &invalid) && strings.Contains(invalid.Error(), "search attribute "+name)
}

func rolloutStartOptions(taskQueue string, in RolloutInput) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:        model.RolloutWorkflowID(in.ProcessGUID),
		TaskQueue: taskQueue,
		// The API and the converger may both start the rollout of an LRP: the second start
		// finds the first one's run instead of failing or starting another.
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		// An LRP has many rollouts over its life, one after another.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:         fmt.Sprintf("%s %s: `%s` → `%s`", in.Kind, in.ProcessGUID, in.FromDefinitionID, in.ToDefinitionID),
		TypedSearchAttributes: startAttributes(in, true),
	}
}

// StartRollout starts the LRP's rollout workflow, or finds the one already running (an
// idempotent start), and returns its run id. The rollout row must already exist (the API
// writes it in the same transaction as the new definition).
func StartRollout(ctx context.Context, c client.Client, taskQueue string, in RolloutInput) (string, error) {
	var runID string
	err := startRollout(taskQueue, in, func(opts client.StartWorkflowOptions) error {
		run, err := c.ExecuteWorkflow(ctx, opts, RolloutWorkflowType, in)
		if err == nil {
			runID = run.GetRunID()
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("start rollout of %s: %w", in.ProcessGUID, err)
	}
	return runID, nil
}

// SupersedeRollout hands a new rollout (in) to the LRP's running rollout workflow, which
// switches to the new target (seed 000), or starts the workflow with in if none is running:
// the old run may have finished between the API's write and this call.
func SupersedeRollout(ctx context.Context, c client.Client, taskQueue string, in RolloutInput) error {
	sig := SupersedeSignal{RolloutID: in.RolloutID, ToDefinitionID: in.ToDefinitionID, Kind: in.Kind,
		FromDefinitionID: in.FromDefinitionID, MaxInFlight: in.MaxInFlight, IndexDeadline: in.IndexDeadline, Failure: in.Failure,
		MinReady: in.MinReady, ProgressDeadline: in.ProgressDeadline, Canary: in.Canary, Analysis: in.Analysis}
	err := startRollout(taskQueue, in, func(opts client.StartWorkflowOptions) error {
		_, err := c.SignalWithStartWorkflow(ctx, model.RolloutWorkflowID(in.ProcessGUID), SignalSupersede, sig, opts, RolloutWorkflowType, in)
		return err
	})
	if err != nil {
		return fmt.Errorf("supersede rollout of %s: %w", in.ProcessGUID, err)
	}
	return nil
}

// SignalRollout sends a payload-less signal (SignalCancel, SignalPause, SignalResume) to the
// LRP's running rollout workflow.
func SignalRollout(ctx context.Context, c client.Client, guid, name string) error {
	if err := c.SignalWorkflow(ctx, model.RolloutWorkflowID(guid), "", name, nil); err != nil {
		return fmt.Errorf("signal %s to the rollout of %s: %w", name, guid, err)
	}
	return nil
}

// CancelRollout sends SignalCancel to the LRP's rollout workflow, starting it with in first
// if no run is under way (the API may have died between committing the rollout and starting
// its workflow): the started run then walks back at once.
func CancelRollout(ctx context.Context, c client.Client, taskQueue string, in RolloutInput) error {
	err := startRollout(taskQueue, in, func(opts client.StartWorkflowOptions) error {
		_, err := c.SignalWithStartWorkflow(ctx, model.RolloutWorkflowID(in.ProcessGUID), SignalCancel, nil, opts, RolloutWorkflowType, in)
		return err
	})
	if err != nil {
		return fmt.Errorf("cancel rollout of %s: %w", in.ProcessGUID, err)
	}
	return nil
}

// RolloutClient starts and steers rollout workflows from rollout rows: it is what the API
// (lrps.Rollouts) and the converger's resumer (activities.RolloutStarter) need.
type RolloutClient struct {
	Client    client.Client
	TaskQueue string
	// MaxInFlight and IndexDeadline tune every rollout started; zero takes the defaults.
	MaxInFlight   int
	IndexDeadline time.Duration
}

// Input is the workflow input of a rollout row: its pace is the row's resolved strategy, or,
// for a row from before strategies, the client's.
func (rc *RolloutClient) Input(r *model.Rollout, domain string) RolloutInput {
	deadline := rc.IndexDeadline
	if ms := r.Strategy.IndexDeadlineMSOr(0); ms > 0 {
		deadline = time.Duration(ms) * time.Millisecond
	}
	return RolloutInput{RolloutID: r.ID, ProcessGUID: r.ProcessGUID, Domain: domain,
		FromDefinitionID: r.FromDefinitionID, ToDefinitionID: r.ToDefinitionID, Kind: r.Kind,
		MaxInFlight: r.Strategy.MaxInFlightOr(rc.MaxInFlight), IndexDeadline: deadline, Runs: true, WalkByRuns: true,
		Failure: failurePolicy(r.Strategy), MinReady: millis(r.Strategy, func(s *model.RolloutStrategy) *int64 { return s.MinReadyMS }),
		ProgressDeadline: millis(r.Strategy, func(s *model.RolloutStrategy) *int64 { return s.ProgressDeadlineMS }),
		Canary:           canarySteps(r.Strategy), Analysis: analysisPolicy(r.Strategy), Group: r.GroupID}
}

// analysisPolicy is a resolved strategy's analysis when a step or the background uses it.
func analysisPolicy(s *model.RolloutStrategy) *model.AnalysisPolicy {
	if s == nil {
		return nil
	}
	used := s.Analysis != nil && s.Analysis.Background != nil && *s.Analysis.Background
	if s.Canary != nil {
		for _, st := range s.Canary.Steps {
			used = used || st.Analysis
		}
	}
	if !used {
		return nil
	}
	p := s.Analysis.Policy()
	return &p
}

// canarySteps are a resolved strategy's canary steps. A step without a promote mode is
// "auto"; a step's instances are cumulative, so one without carries the count before it.
func canarySteps(s *model.RolloutStrategy) []CanaryStep {
	if s == nil || s.Canary == nil {
		return nil
	}
	var out []CanaryStep
	prev := int32(0)
	for _, st := range s.Canary.Steps {
		c := CanaryStep{Manual: st.Promote != nil && *st.Promote == model.PromoteManual, Instances: prev}
		if st.Instances != nil {
			c.Instances = *st.Instances
		}
		prev = c.Instances
		c.Weight, c.Analysis = st.Weight, st.Analysis
		if st.PauseMS != nil {
			c.Pause = time.Duration(*st.PauseMS) * time.Millisecond
		}
		out = append(out, c)
	}
	return out
}

// millis is a duration field of a resolved strategy (0 when it has none).
func millis(s *model.RolloutStrategy, field func(*model.RolloutStrategy) *int64) time.Duration {
	if s == nil || field(s) == nil {
		return 0
	}
	return time.Duration(*field(s)) * time.Millisecond
}

// failurePolicy is the failure policy of a resolved strategy; nil for a rollout without one
// (started before strategies), which walks as the seeds do.
func failurePolicy(s *model.RolloutStrategy) *FailurePolicy {
	if s == nil {
		return nil
	}
	p := &FailurePolicy{OnFailure: model.OnFailureRevert}
	if s.OnFailure != nil {
		p.OnFailure = *s.OnFailure
	}
	if f := s.Failure; f != nil {
		if f.MaxCrashes != nil {
			p.MaxCrashes = *f.MaxCrashes
		}
		if f.MaxFailedIndices != nil {
			p.MaxFailedIndices = *f.MaxFailedIndices
		}
	}
	return p
}

// Defaults is the server's layer of every rollout's strategy (model.ResolveStrategy): the
// contract's defaults with this client's pace in place of theirs, where it sets one.
func (rc *RolloutClient) Defaults() *model.RolloutStrategy {
	s := model.DefaultRolloutStrategy()
	if rc.MaxInFlight > 0 {
		n := int32(rc.MaxInFlight)
		s.MaxInFlight = &n
	}
	if rc.IndexDeadline > 0 {
		ms := rc.IndexDeadline.Milliseconds()
		s.IndexDeadlineMS = &ms
	}
	return &s
}

// StartRollout starts the workflow of the rollout the API just recorded, or hands it to the
// run under way. It is a signal-with-start of the supersede signal, not a plain start: with
// no rollout in progress the LRP's workflow may still be finishing the one before (its row
// ended, its run not yet), and a plain start would find that run — which then ends — and
// leave the new rollout without one (found by BenchmarkAbortWeightZero). The run under way
// takes the signal as a new rollout; a run the signal starts ignores it as its own.
func (rc *RolloutClient) StartRollout(ctx context.Context, r *model.Rollout, domain string) error {
	return SupersedeRollout(ctx, rc.Client, rc.TaskQueue, rc.Input(r, domain))
}

// ResumeRollout starts the workflow of a rollout under way that convergence found, or keeps
// the run there is: a plain start, never a signal — the row convergence read may have been
// superseded since, and the run walking its successor must not be sent back to it.
func (rc *RolloutClient) ResumeRollout(ctx context.Context, r *model.Rollout, domain string) error {
	_, err := StartRollout(ctx, rc.Client, rc.TaskQueue, rc.Input(r, domain))
	return err
}

// SupersedeRollout hands the new rollout r to the LRP's running workflow (or starts one).
func (rc *RolloutClient) SupersedeRollout(ctx context.Context, r *model.Rollout, domain string) error {
	return SupersedeRollout(ctx, rc.Client, rc.TaskQueue, rc.Input(r, domain))
}

// CancelRollout cancels the rollout r (or starts its workflow walking back).
func (rc *RolloutClient) CancelRollout(ctx context.Context, r *model.Rollout, domain string) error {
	return CancelRollout(ctx, rc.Client, rc.TaskQueue, rc.Input(r, domain))
}

// Control signals the rollout r's workflow: pause, resume, set_pace or abort. A workflow that
// is not running answers an error (the API says Unavailable); the converger starts a run for
// every rollout under way, which then takes the control when it is sent again.
func (rc *RolloutClient) Control(ctx context.Context, r *model.Rollout, c model.RolloutControl) error {
	var name string
	var arg any
	switch c.Kind {
	case model.ControlPause:
		name = SignalPause
	case model.ControlResume:
		name = SignalResume
	case model.ControlSetPace:
		name, arg = SignalSetPace, SetPaceSignal{MaxInFlight: int(c.MaxInFlight)}
	case model.ControlAbort:
		name, arg = SignalAbort, AbortSignal{Reason: c.Reason}
	case model.ControlPromote:
		name, arg = SignalPromote, PromoteSignal{Full: c.Full}
	default:
		return fmt.Errorf("unknown rollout control %q", c.Kind)
	}
	if err := rc.Client.SignalWorkflow(ctx, model.RolloutWorkflowID(r.ProcessGUID), "", name, arg); err != nil {
		return fmt.Errorf("signal %s to the rollout of %s: %w", name, r.ProcessGUID, err)
	}
	return nil
}
