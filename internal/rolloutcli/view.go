package rolloutcli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// View is what `bbs rollout status` prints and `watch` redraws: the rollout and, per index,
// the instance of the definition it leaves and of the one it goes to.
type View struct {
	Rollout   *model.Rollout
	Instances []model.ActualLRP
	// Freeze is the fleet's freeze (nil: unknown).
	Freeze *model.RolloutFreeze
}

// barWidth is the progress bar's length in characters.
const barWidth = 30

// Render writes the view as text, the same text for the same view (watch redraws only what
// changed). now is when the view was read, for the rollout's age.
func (v View) Render(w io.Writer, now time.Time) {
	r := v.Rollout
	fmt.Fprintf(w, "rollout %s of %s: %s → %s (%s)\n", r.ID, r.ProcessGUID, r.FromDefinitionID, r.ToDefinitionID, r.Kind)
	fmt.Fprintf(w, "phase   %s (state %s)", r.Phase, r.State)
	if r.StepsTotal > 0 && r.Step != nil {
		fmt.Fprintf(w, ", canary step %d of %d", *r.Step+1, r.StepsTotal)
	}
	if r.Reason != "" {
		fmt.Fprintf(w, ": %s", r.Reason)
	}
	fmt.Fprintln(w)
	if s := r.Strategy; s != nil {
		fmt.Fprintf(w, "pace    max_in_flight %d, index deadline %v, on failure %s\n", s.MaxInFlightOr(1),
			time.Duration(s.IndexDeadlineMSOr(0))*time.Millisecond, deref(s.OnFailure, "-"))
		if s.Window != nil {
			fmt.Fprintf(w, "window  %s (walks only while it is open)\n", *s.Window)
		}
		if s.BreakGlass != nil {
			fmt.Fprintf(w, "break glass: %s\n", *s.BreakGlass)
		}
	}
	if f := v.Freeze; f != nil && f.Frozen {
		fmt.Fprintf(w, "freeze  %s\n", freezeText(*f))
	}
	fmt.Fprintf(w, "        [%s] %d/%d updated", bar(r.UpdatedInstances, r.Instances), r.UpdatedInstances, r.Instances)
	if len(r.GivenUpIndices) > 0 {
		fmt.Fprintf(w, ", given up %v", r.GivenUpIndices)
	}
	fmt.Fprintln(w)
	for _, f := range []struct {
		label string
		f     *model.RolloutFailure
	}{{"failure", r.Failure}, {"revert failure", r.RevertFailure}} {
		if f.f != nil {
			fmt.Fprintf(w, "%-7s %s (%s)%s: %s\n", f.label, f.f.Reason, f.f.Kind, atIndex(f.f.Index), f.f.Detail)
		}
	}
	if r.RevertedTo != "" {
		fmt.Fprintf(w, "reverted to %s\n", r.RevertedTo)
	}
	renderTraffic(w, r)
	renderAnalysis(w, r.Analysis)
	v.renderIndices(w)
	// The age last: watch compares views without it (withoutAge).
	if r.FinishedAt != 0 {
		fmt.Fprintf(w, "took    %v\n", time.Unix(0, r.FinishedAt).Sub(time.Unix(0, r.StartedAt)).Round(time.Millisecond))
	} else {
		fmt.Fprintf(w, "running %v\n", now.Sub(time.Unix(0, r.StartedAt)).Round(time.Second))
	}
}

// renderTraffic is the split of requests the routers acknowledged: a bar per definition.
func renderTraffic(w io.Writer, r *model.Rollout) {
	if len(r.Traffic) == 0 {
		return
	}
	defs := slices.Sorted(maps.Keys(r.Traffic))
	fmt.Fprintf(w, "traffic generation %d, acknowledged by every router\n", r.TrafficGeneration)
	for _, d := range defs {
		fmt.Fprintf(w, "        %-22s [%s] %3d %%\n", d, bar(r.Traffic[d], 100), r.Traffic[d])
	}
}

// analysisShown is how many of the latest verdicts the view lists.
const analysisShown = 5

// renderAnalysis lists the latest verdicts: canary against baseline.
func renderAnalysis(w io.Writer, verdicts []model.AnalysisVerdict) {
	if len(verdicts) == 0 {
		return
	}
	fmt.Fprintf(w, "analysis %d verdicts (canary vs baseline: requests, 5xx, p99)\n", len(verdicts))
	for _, v := range verdicts[max(0, len(verdicts)-analysisShown):] {
		fmt.Fprintf(w, "        %-14s %-12s %d vs %d, %.2f %% vs %.2f %%, %.0f vs %.0f ms: %s\n", v.Window, v.Verdict,
			v.Canary.Requests, v.Baseline.Requests, 100*v.Canary.ErrorRate, 100*v.Baseline.ErrorRate, v.Canary.P99MS, v.Baseline.P99MS, v.Reason)
	}
}

// renderIndices is the table of indices: what runs there of each definition, and whether
// it takes traffic.
func (v View) renderIndices(w io.Writer) {
	r := v.Rollout
	from, to := r.FromDefinitionID, r.ToDefinitionID
	byIndex := map[int32]map[string]*model.ActualLRP{}
	var others []string
	for i := range v.Instances {
		a := &v.Instances[i]
		if byIndex[a.Index] == nil {
			byIndex[a.Index] = map[string]*model.ActualLRP{}
		}
		byIndex[a.Index][a.DefinitionID] = a
		if a.DefinitionID != from && a.DefinitionID != to && !slices.Contains(others, a.DefinitionID) {
			others = append(others, a.DefinitionID)
		}
	}
	slices.Sort(others)
	fmt.Fprintf(w, "%-6s %-22s %-22s", "index", "old "+from, "new "+to)
	for _, o := range others {
		fmt.Fprintf(w, " %-22s", o)
	}
	fmt.Fprintln(w)
	n := r.Instances
	for i := range v.Instances {
		n = max(n, v.Instances[i].Index+1)
	}
	for i := range n {
		fmt.Fprintf(w, "%-6d %-22s %-22s", i, cell(byIndex[i][from]), cell(byIndex[i][to]))
		for _, o := range others {
			fmt.Fprintf(w, " %-22s", cell(byIndex[i][o]))
		}
		fmt.Fprintln(w)
	}
}

// cell describes one instance: its state, whether it is routable (ready), and a crash count.
func cell(a *model.ActualLRP) string {
	if a == nil {
		return "-"
	}
	s := a.State
	switch {
	case a.Routable():
		s += " ready"
	case a.State == model.StateRunning:
		s += " not ready"
	}
	if a.Presence != "" && a.Presence != model.PresenceOrdinary {
		s += " " + strings.ToLower(a.Presence)
	}
	if a.CrashCount > 0 {
		s += fmt.Sprintf(" (%d crashes)", a.CrashCount)
	}
	return s
}

func bar(done, total int32) string {
	filled := 0
	if total > 0 {
		filled = int(min(done, total)) * barWidth / int(total)
	}
	return strings.Repeat("#", filled) + strings.Repeat(".", barWidth-filled)
}

func deref(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}

func atIndex(i *int32) string {
	if i == nil {
		return ""
	}
	return fmt.Sprintf(" at index %d", *i)
}
