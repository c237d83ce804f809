package db

import (
	"context"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// unretireIndicesBelow withdraws the retirement of the instances a scale-down retired, when
// the LRP is scaled back up over them before their cells stopped them: each CLAIMED or
// RUNNING ordinary instance of one of defs (the definitions the LRP would start there) below
// n that is retiring, at an index no other ordinary instance serves, serves on. Otherwise
// the index, its slot still taken by the retiring instance, would get no new instance, and
// would stand empty from the retiring one's stop until convergence's next pass — an index
// scaled down and up within a drain time, below the desired count for up to 30 s. The cells
// still hold the stop requests (cellapi.StopRequest.Retiring): after their drain they see the
// retirement withdrawn and keep the instance.
func unretireIndicesBelow(ctx context.Context, tx *sqlx.Tx, guid string, n int32, defs []string) ([]pendingEvent, error) {
	var rows []actualRow
	if err := tx.SelectContext(ctx, &rows, `UPDATE actual_lrps a SET retiring = false, modification_index = modification_index + 1
WHERE a.process_guid = $1 AND a.instance_index < $2 AND a.definition_id = ANY($3) AND a.presence = 'ORDINARY'
  AND a.retiring AND NOT a.stop_claimed AND a.state IN ('CLAIMED', 'RUNNING')
  AND NOT EXISTS (SELECT 1 FROM actual_lrps o WHERE o.process_guid = a.process_guid AND o.instance_index = a.instance_index
      AND o.presence = 'ORDINARY' AND NOT o.retiring)
RETURNING `+actualColumns, guid, n, pq.StringArray(defs)); err != nil {
		return nil, err
	}
	kept, err := actualModels(rows)
	if err != nil {
		return nil, err
	}
	return retirementChanged(kept), nil
}
