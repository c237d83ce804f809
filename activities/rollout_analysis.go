package activities

import (
	"context"

	"github.com/updatable-lrps/bbs/analysis"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
)

// AnalysisStore is what the analysis activities need of the database (db/analysis.go).
type AnalysisStore interface {
	TakeAnalysisMark(ctx context.Context, rolloutID, guid, name string) (int64, error)
	AnalysisWindow(ctx context.Context, rolloutID, guid, canary, from, to string) (db.AnalysisWindow, error)
	RecordVerdict(ctx context.Context, rolloutID string, v model.AnalysisVerdict) error
}

// MarkAnalysisInput names a mark of a rollout's analysis: what the routers had counted for
// its LRP now. A retried mark keeps the first snapshot.
type MarkAnalysisInput struct {
	RolloutID   string `json:"rollout_id"`
	ProcessGUID string `json:"process_guid"`
	Name        string `json:"name"`
}

// MarkAnalysisOutput is when the mark was taken (Unix nanoseconds).
type MarkAnalysisOutput struct {
	At int64 `json:"at"`
}

// MarkAnalysis takes a mark: the start of a window.
func (a *Rollouts) MarkAnalysis(ctx context.Context, in MarkAnalysisInput) (MarkAnalysisOutput, error) {
	at, err := a.Store.TakeAnalysisMark(ctx, in.RolloutID, in.ProcessGUID, in.Name)
	return MarkAnalysisOutput{At: at}, nonRetryable(err)
}

// JudgeAnalysisInput asks for the verdict on the window from mark From to mark To (taken
// now, or kept from an earlier attempt), named Window on the rollout's analysis list.
type JudgeAnalysisInput struct {
	RolloutID   string               `json:"rollout_id"`
	ProcessGUID string               `json:"process_guid"`
	Canary      string               `json:"canary_definition_id"`
	Step        *int32               `json:"step,omitempty"`
	From        string               `json:"from"`
	To          string               `json:"to"`
	Window      string               `json:"window"`
	Policy      model.AnalysisPolicy `json:"policy"`
}

// JudgeAnalysis measures the window, asks the routers' telemetry and every provider the
// operator added, records the worst verdict on the rollout and returns it (with its
// figures, in the workflow's history).
func (a *Rollouts) JudgeAnalysis(ctx context.Context, in JudgeAnalysisInput) (model.AnalysisVerdict, error) {
	if _, err := a.Store.TakeAnalysisMark(ctx, in.RolloutID, in.ProcessGUID, in.To); err != nil {
		return model.AnalysisVerdict{}, nonRetryable(err)
	}
	w, err := a.Store.AnalysisWindow(ctx, in.RolloutID, in.ProcessGUID, in.Canary, in.From, in.To)
	if err != nil {
		return model.AnalysisVerdict{}, nonRetryable(err)
	}
	window := analysis.Window{ProcessGUID: in.ProcessGUID, Canary: in.Canary, Step: in.Step, From: w.From, To: w.To,
		Policy: in.Policy, CanaryMeasured: w.Canary, BaselineMeasured: w.Baseline}
	providers := append([]analysis.Provider{analysis.Telemetry{}}, a.Analysis...)
	res, by := analysis.Judge(ctx, window, providers...)
	v := model.AnalysisVerdict{Step: in.Step, Window: in.Window, From: w.From, At: w.To, Verdict: res.Verdict,
		Canary: w.Canary, Baseline: w.Baseline, Reason: res.Reason, Provider: by}
	return v, nonRetryable(a.Store.RecordVerdict(ctx, in.RolloutID, v))
}
