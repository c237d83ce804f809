package bench

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// phaseNames are the parts of one index step, each read from the store's events (their
// transactions' start times): desire the new instance → a cell claims it (placement, the
// cell's claim) → it reports it RUNNING (the cell's start) → the old one at the index is
// retired (the wait wakes, the workflow retires) → the rollout records the index (progress)
// → the next index's instance is desired (the workflow's turnaround).
var phaseNames = []string{"desire→claimed", "claimed→running", "running→retired", "retired→recorded", "recorded→next desire"}

// rolloutPhases prints the median of each phase over a rollout of guid from one definition to
// another, so that a change to the step says which part it bought.
func rolloutPhases(b *testing.B, c database, guid, from, to string) string {
	b.Helper()
	var rows []struct {
		Name string    `db:"name"`
		At   time.Time `db:"created_at"`
		Data []byte    `db:"data"`
	}
	if err := c.DB().SelectContext(ctx, &rows, `SELECT name, created_at, data::text::bytea AS data FROM events
WHERE data->>'process_guid' = $1 OR data->'after'->>'process_guid' = $1 OR data->'before'->>'process_guid' = $1
ORDER BY id`, guid); err != nil {
		b.Fatal(err)
	}
	type marks struct{ desire, claim, run, retire, record time.Time }
	at := map[int32]*marks{}
	mark := func(i int32) *marks {
		if at[i] == nil {
			at[i] = &marks{}
		}
		return at[i]
	}
	setOnce := func(t *time.Time, v time.Time) {
		if t.IsZero() {
			*t = v
		}
	}
	for _, r := range rows {
		switch r.Name {
		case model.EventActualLRPCreated:
			var a model.ActualLRP
			if json.Unmarshal(r.Data, &a) == nil && a.DefinitionID == to {
				setOnce(&mark(a.Index).desire, r.At)
			}
		case model.EventActualLRPChanged:
			var ch model.Change[model.ActualLRP]
			if json.Unmarshal(r.Data, &ch) != nil {
				continue
			}
			a := ch.After
			switch {
			case a.DefinitionID == to && a.State == model.StateClaimed:
				setOnce(&mark(a.Index).claim, r.At)
			case a.DefinitionID == to && a.State == model.StateRunning && ch.Before.State != model.StateRunning:
				setOnce(&mark(a.Index).run, r.At)
			case a.DefinitionID == from && a.Retiring && !ch.Before.Retiring:
				setOnce(&mark(a.Index).retire, r.At)
			}
		case model.EventRolloutChanged:
			var ro model.Rollout
			if json.Unmarshal(r.Data, &ro) == nil && ro.UpdatedInstances > 0 {
				setOnce(&mark(ro.UpdatedInstances-1).record, r.At)
			}
		}
	}
	phases := make([][]time.Duration, len(phaseNames))
	for i := int32(0); at[i] != nil; i++ {
		m := at[i]
		ts := []time.Time{m.desire, m.claim, m.run, m.retire, m.record}
		if next := at[i+1]; next != nil {
			ts = append(ts, next.desire)
		}
		for p := 0; p+1 < len(ts); p++ {
			if !ts[p].IsZero() && !ts[p+1].IsZero() {
				phases[p] = append(phases[p], ts[p+1].Sub(ts[p]))
			}
		}
	}
	var sb strings.Builder
	for p, name := range phaseNames {
		if len(phases[p]) > 0 {
			fmt.Fprintf(&sb, "%s %.1f ms  ", name, float64(percentile(phases[p], 0.5).Microseconds())/1000)
		}
	}
	return sb.String()
}
