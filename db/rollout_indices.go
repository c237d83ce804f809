package db

import (
	"context"

	"github.com/lib/pq"
)

// IndicesOff lists the indices below the LRP's count that hold an ORDINARY instance, not
// retiring, of another definition than def: what a cancelled rollout must walk back to def.
// Besides the indices the walk replaced, a scale-up during the walk may have created some
// directly on the (healthy) target, which the walk never replaced.
func (s *Store) IndicesOff(ctx context.Context, guid, def string) ([]int32, error) {
	var out pq.Int32Array
	err := s.db.GetContext(ctx, &out, `SELECT coalesce(array_agg(DISTINCT a.instance_index ORDER BY a.instance_index), '{}')
FROM actual_lrps a JOIN desired_lrps l ON l.process_guid = a.process_guid
WHERE a.process_guid = $1 AND a.definition_id <> $2 AND a.presence = 'ORDINARY' AND NOT a.retiring
  AND a.instance_index < l.instances`, guid, def)
	return out, mapError(err)
}
