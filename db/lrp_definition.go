package db

import (
	"encoding/json"
	"fmt"

	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// definitionRow is one row of lrp_definitions. Scheduling fields are columns; everything else
// is the run info, kept as JSON.
type definitionRow struct {
	ProcessGUID   string         `db:"process_guid"`
	DefinitionID  string         `db:"definition_id"`
	RootFS        string         `db:"rootfs"`
	MemoryMB      int32          `db:"memory_mb"`
	DiskMB        int32          `db:"disk_mb"`
	LogGUID       string         `db:"log_guid"`
	PlacementTags pq.StringArray `db:"placement_tags"`
	RunInfo       jsonText       `db:"run_info"`
}

func newDefinitionRow(processGUID string, d *model.LRPDefinition) (*definitionRow, error) {
	runInfo := *d
	runInfo.DefinitionID, runInfo.RootFS, runInfo.LogGUID = "", "", ""
	runInfo.MemoryMB, runInfo.DiskMB, runInfo.PlacementTags = 0, 0, nil
	b, err := json.Marshal(&runInfo)
	if err != nil {
		return nil, fmt.Errorf("encode run info: %w", err)
	}
	tags := d.PlacementTags
	if tags == nil {
		tags = []string{}
	}
	return &definitionRow{
		ProcessGUID:   processGUID,
		DefinitionID:  d.DefinitionID,
		RootFS:        d.RootFS,
		MemoryMB:      d.MemoryMB,
		DiskMB:        d.DiskMB,
		LogGUID:       d.LogGUID,
		PlacementTags: tags,
		RunInfo:       b,
	}, nil
}

func (r *definitionRow) model() (model.LRPDefinition, error) {
	var d model.LRPDefinition
	if err := json.Unmarshal(r.RunInfo, &d); err != nil {
		return d, fmt.Errorf("decode run info of %s/%s: %w", r.ProcessGUID, r.DefinitionID, err)
	}
	d.DefinitionID = r.DefinitionID
	d.RootFS = r.RootFS
	d.MemoryMB = r.MemoryMB
	d.DiskMB = r.DiskMB
	d.LogGUID = r.LogGUID
	if len(r.PlacementTags) > 0 {
		d.PlacementTags = r.PlacementTags
	}
	return d, nil
}

const insertDefinition = `
INSERT INTO lrp_definitions
    (process_guid, definition_id, rootfs, memory_mb, disk_mb, log_guid, placement_tags, run_info)
VALUES
    (:process_guid, :definition_id, :rootfs, :memory_mb, :disk_mb, :log_guid, :placement_tags, :run_info)`

const definitionColumns = `d.process_guid, d.definition_id, d.rootfs, d.memory_mb, d.disk_mb,
    d.log_guid, d.placement_tags, d.run_info`
