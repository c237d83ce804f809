package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// logRolloutTimelines reads the histories of up to n of the rollouts of the LRPs named
// prefix… and logs, p50 and p90 over them, how long each stretch of a rollout's life in
// Temporal took: from the workflow's start to its first workflow task handed to the worker,
// that task's work (the local activities before the walk), the walk's activity from
// scheduled to started and from started to completed, and from there to the workflow's end.
// Where a run's time goes when its steps are quick.
func logRolloutTimelines(b *testing.B, s target, prefix string, n int) {
	b.Helper()
	var ids []string
	if err := s.DB().SelectContext(ctx, &ids, `SELECT workflow_id FROM rollouts WHERE process_guid LIKE $1 ORDER BY random() LIMIT $2`, prefix+"%", n); err != nil {
		b.Fatal(err)
	}
	names := []string{"start → first task started", "first task's work", "walk scheduled → started", "walk started → completed", "walk completed → end"}
	spans := make([][]time.Duration, len(names))
	for _, id := range ids {
		var started, firstTaskStarted, firstTaskDone, actScheduled, actStarted, actDone, end time.Time
		it := s.TemporalClient().GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				b.Fatal(err)
			}
			at := e.GetEventTime().AsTime()
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				started = at
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				if firstTaskStarted.IsZero() {
					firstTaskStarted = at
				}
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				if firstTaskDone.IsZero() {
					firstTaskDone = at
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				if actScheduled.IsZero() {
					actScheduled = at
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				if actStarted.IsZero() {
					actStarted = at
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				if actDone.IsZero() {
					actDone = at
				}
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
				end = at
			}
		}
		pairs := [][2]time.Time{{started, firstTaskStarted}, {firstTaskStarted, firstTaskDone},
			{actScheduled, actStarted}, {actStarted, actDone}, {actDone, end}}
		for k, p := range pairs {
			if !p[0].IsZero() && !p[1].IsZero() {
				spans[k] = append(spans[k], p[1].Sub(p[0]))
			}
		}
	}
	var sb strings.Builder
	for k, name := range names {
		if len(spans[k]) > 0 {
			fmt.Fprintf(&sb, "%s %s/%s; ", name, percentile(spans[k], 0.5).Round(time.Millisecond), percentile(spans[k], 0.9).Round(time.Millisecond))
		}
	}
	b.Logf("%d rollouts' lives in Temporal, p50/p90: %s", len(ids), sb.String())
}
