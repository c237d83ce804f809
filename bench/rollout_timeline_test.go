package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
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
	stretches := []struct {
		name     string
		from, to enumspb.EventType
	}{
		{"start → first task started", enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED},
		{"first task's work", enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED},
		{"walk scheduled → started", enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED},
		{"walk started → completed", enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED},
		{"walk completed → end", enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	}
	spans := make([][]time.Duration, len(stretches))
	for _, id := range ids {
		// The first event of each type: the first workflow task is the one before the walk, the
		// first activity the walk.
		first := map[enumspb.EventType]time.Time{}
		it := s.TemporalClient().GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				b.Fatal(err)
			}
			if _, seen := first[e.GetEventType()]; !seen {
				first[e.GetEventType()] = e.GetEventTime().AsTime()
			}
		}
		for k, st := range stretches {
			from, ok1 := first[st.from]
			to, ok2 := first[st.to]
			if ok1 && ok2 {
				spans[k] = append(spans[k], to.Sub(from))
			}
		}
	}
	var sb strings.Builder
	for k, st := range stretches {
		if len(spans[k]) > 0 {
			fmt.Fprintf(&sb, "%s %s/%s; ", st.name, percentile(spans[k], 0.5).Round(time.Millisecond), percentile(spans[k], 0.9).Round(time.Millisecond))
		}
	}
	b.Logf("%d rollouts' lives in Temporal, p50/p90: %s", len(ids), sb.String())
}

// logRolloutCurve says when, after start, the rollouts of the LRPs named prefix… began and
// ended (the fraction of them by then): whether a run's time is its bulk or a tail.
func logRolloutCurve(b *testing.B, c database, prefix string, start time.Time) {
	row := c.DB().QueryRowxContext(ctx, `SELECT
  percentile_cont(ARRAY[0.5, 0.9, 1]) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - $2)) AS began,
  percentile_cont(ARRAY[0.5, 0.9, 0.99, 1]) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - $2)) AS ended
FROM rollouts WHERE process_guid LIKE $1`, prefix+"%", start)
	var began, ended pq.Float64Array
	if err := row.Scan(&began, &ended); err != nil {
		b.Fatal(err)
	}
	// Each new instance's phases, from the events its changes wrote: desired → claimed
	// (placement, the cell's claim), claimed → RUNNING (the start and its report), and
	// RUNNING → the next index desired (the wait's wake-up and the run's next step).
	var phases pq.Float64Array
	if err := c.DB().QueryRowxContext(ctx, `WITH ev AS (
  SELECT e.process_guid AS g, coalesce(e.data->'after', e.data) AS a, e.name, e.created_at AS at
  FROM events e WHERE e.process_guid LIKE $1 AND e.created_at >= $2
    AND e.name IN ('actual_lrp_instance_created', 'actual_lrp_instance_changed')),
inst AS (
  SELECT g, (a->>'index')::int AS i,
    min(at) FILTER (WHERE name = 'actual_lrp_instance_created') AS desired,
    min(at) FILTER (WHERE a->>'state' = 'CLAIMED') AS claimed,
    min(at) FILTER (WHERE a->>'state' = 'RUNNING') AS running
  FROM ev WHERE a->>'definition_id' = 'v2' GROUP BY 1, 2),
steps AS (
  SELECT extract(epoch FROM claimed - desired) AS claim, extract(epoch FROM running - claimed) AS start,
    extract(epoch FROM lead(desired) OVER (PARTITION BY g ORDER BY i) - running) AS next
  FROM inst),
ends AS (
  SELECT extract(epoch FROM min(inst.desired) - r.started_at) AS first, extract(epoch FROM r.finished_at - max(inst.running)) AS last
  FROM inst JOIN rollouts r ON r.process_guid = inst.g GROUP BY r.started_at, r.finished_at)
SELECT ARRAY[percentile_cont(0.5) WITHIN GROUP (ORDER BY claim), percentile_cont(0.9) WITHIN GROUP (ORDER BY claim),
  percentile_cont(0.5) WITHIN GROUP (ORDER BY start), percentile_cont(0.9) WITHIN GROUP (ORDER BY start),
  percentile_cont(0.5) WITHIN GROUP (ORDER BY next), percentile_cont(0.9) WITHIN GROUP (ORDER BY next),
  (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY first) FROM ends), (SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY first) FROM ends),
  (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY last) FROM ends), (SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY last) FROM ends)] FROM steps`,
		prefix+"%", start).Scan(&phases); err != nil {
		b.Fatal(err)
	}
	b.Logf("a step's phases, p50/p90: desired → claimed %.0f/%.0f ms, claimed → RUNNING %.0f/%.0f ms, RUNNING → next index desired %.0f/%.0f ms",
		phases[0]*1000, phases[1]*1000, phases[2]*1000, phases[3]*1000, phases[4]*1000, phases[5]*1000)
	b.Logf("a rollout's start → its first index desired %.0f/%.0f ms, its last RUNNING → its end %.0f/%.0f ms (p50/p90)",
		phases[6]*1000, phases[7]*1000, phases[8]*1000, phases[9]*1000)
	b.Logf("rollouts began by %.1f s (half), %.1f s (90 %%), %.1f s (all); ended by %.1f s (half), %.1f s (90 %%), %.1f s (99 %%), %.1f s (all)",
		began[0], began[1], began[2], ended[0], ended[1], ended[2], ended[3])
}
