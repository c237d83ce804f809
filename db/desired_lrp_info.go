package db

import (
	"context"

	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// schedulingRow is the scheduling part of an LRP and its active definition.
type schedulingRow struct {
	desiredRow
	RootFS        string         `db:"rootfs"`
	MemoryMB      int32          `db:"memory_mb"`
	DiskMB        int32          `db:"disk_mb"`
	MaxPids       int32          `db:"max_pids"`
	LogGUID       string         `db:"log_guid"`
	PlacementTags pq.StringArray `db:"placement_tags"`
	VolumeDrivers pq.StringArray `db:"volume_drivers"`
}

// DesiredLRPSchedulingInfos lists what placement needs of the matching LRPs, without reading
// any run info.
func (s *Store) DesiredLRPSchedulingInfos(ctx context.Context, f model.DesiredLRPFilter) ([]model.DesiredLRPSchedulingInfo, error) {
	out := []model.DesiredLRPSchedulingInfo{}
	err := s.EachSchedulingInfo(ctx, f, func(info *model.DesiredLRPSchedulingInfo) error {
		out = append(out, *info)
		return nil
	})
	return out, err
}

// EachSchedulingInfo calls fn with each scheduling info DesiredLRPSchedulingInfos would list,
// in the same order, as the rows arrive (Cloud Controller's sync reads every one).
func (s *Store) EachSchedulingInfo(ctx context.Context, f model.DesiredLRPFilter, fn func(*model.DesiredLRPSchedulingInfo) error) error {
	return eachRow(ctx, s, planPerCall+`SELECT `+desiredColumns+`,
    d.rootfs, d.memory_mb, d.disk_mb, d.max_pids, d.log_guid, d.placement_tags, d.volume_drivers
FROM desired_lrps l
JOIN lrp_definitions d ON d.process_guid = l.process_guid AND d.definition_id = l.active_definition_id`+
		filterClause+` ORDER BY l.process_guid`, filterArgs(f), func(r *schedulingRow) error {
		routes, _, err := r.routesAndTags()
		if err != nil {
			return err
		}
		info := model.DesiredLRPSchedulingInfo{
			ProcessGUID:          r.ProcessGUID,
			Domain:               r.Domain,
			LogGUID:              r.LogGUID,
			Instances:            r.Instances,
			Routes:               routes,
			Annotation:           r.Annotation,
			ModificationTag:      r.tag(),
			DefinitionID:         r.ActiveDefinitionID,
			PreviousDefinitionID: r.PreviousDefinitionID.String,
			HealthyDefinitionID:  r.HealthyDefinitionID.String,
			RootFS:               r.RootFS,
			MemoryMB:             r.MemoryMB,
			DiskMB:               r.DiskMB,
			MaxPids:              r.MaxPids,
		}
		if len(r.PlacementTags) > 0 {
			info.PlacementTags = r.PlacementTags
		}
		if len(r.VolumeDrivers) > 0 {
			info.VolumeDrivers = r.VolumeDrivers
		}
		return fn(&info)
	})
}

// routingRow is the routing part of an LRP: its LRP-level fields and its log guid.
type routingRow struct {
	desiredRow
	LogGUID string `db:"log_guid"`
}

// DesiredLRPRoutingInfos lists what routers need of the matching LRPs (BBS's routing infos:
// process guid, domain, instances, routes, log guid, modification tag and metric tags),
// without reading any run info.
func (s *Store) DesiredLRPRoutingInfos(ctx context.Context, f model.DesiredLRPFilter) ([]model.DesiredLRP, error) {
	var rows []routingRow
	err := s.db.SelectContext(ctx, &rows, planPerCall+`SELECT `+desiredColumns+`, d.log_guid
FROM desired_lrps l
JOIN lrp_definitions d ON d.process_guid = l.process_guid AND d.definition_id = l.active_definition_id`+
		filterClause+` ORDER BY l.process_guid`, filterArgs(f)...)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]model.DesiredLRP, 0, len(rows))
	for i := range rows {
		r := &rows[i]
		routes, tags, err := r.routesAndTags()
		if err != nil {
			return nil, err
		}
		out = append(out, model.DesiredLRP{
			ProcessGUID:          r.ProcessGUID,
			Domain:               r.Domain,
			Instances:            r.Instances,
			Routes:               routes,
			Annotation:           r.Annotation,
			MetricTags:           tags,
			ModificationTag:      r.tag(),
			LRPDefinition:        model.LRPDefinition{DefinitionID: r.ActiveDefinitionID, LogGUID: r.LogGUID},
			PreviousDefinitionID: r.PreviousDefinitionID.String,
		})
	}
	return out, nil
}
