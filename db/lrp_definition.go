package db

import (
	"encoding/json"
	"fmt"

	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// definitionRow is one row of lrp_definitions. Scheduling fields are columns; everything else
// is the run info, kept as JSON, beside the protobuf a BBS-protocol client sent (if one did).
type definitionRow struct {
	ProcessGUID   string         `db:"process_guid"`
	DefinitionID  string         `db:"definition_id"`
	RootFS        string         `db:"rootfs"`
	MemoryMB      int32          `db:"memory_mb"`
	DiskMB        int32          `db:"disk_mb"`
	MaxPids       int32          `db:"max_pids"`
	LogGUID       string         `db:"log_guid"`
	PlacementTags pq.StringArray `db:"placement_tags"`
	VolumeDrivers pq.StringArray `db:"volume_drivers"`
	RunInfo       jsonText       `db:"run_info"`
	Protobuf      []byte         `db:"protobuf"`
}

func newDefinitionRow(processGUID string, d *model.LRPDefinition) (*definitionRow, error) {
	runInfo := *d
	runInfo.DefinitionID, runInfo.RootFS, runInfo.LogGUID = "", "", ""
	runInfo.MemoryMB, runInfo.DiskMB, runInfo.MaxPids, runInfo.PlacementTags = 0, 0, 0, nil
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
		MaxPids:       d.MaxPids,
		LogGUID:       d.LogGUID,
		PlacementTags: tags,
		VolumeDrivers: volumeDrivers(d.VolumeMounts),
		RunInfo:       b,
		Protobuf:      d.Protobuf,
	}, nil
}

// volumeDrivers lists the driver of each volume mount, as BBS's VolumePlacement does
// (placement needs them without the run info).
func volumeDrivers(mounts json.RawMessage) pq.StringArray {
	var ms []struct {
		Driver string `json:"driver"`
	}
	drivers := pq.StringArray{}
	if json.Unmarshal(mounts, &ms) != nil {
		return drivers
	}
	for _, m := range ms {
		drivers = append(drivers, m.Driver)
	}
	return drivers
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
	d.MaxPids = r.MaxPids
	d.LogGUID = r.LogGUID
	if len(r.PlacementTags) > 0 {
		d.PlacementTags = r.PlacementTags
	}
	d.Protobuf = r.Protobuf
	return d, nil
}

const insertDefinition = `
INSERT INTO lrp_definitions
    (process_guid, definition_id, rootfs, memory_mb, disk_mb, max_pids, log_guid, placement_tags,
     volume_drivers, run_info, protobuf)
VALUES
    (:process_guid, :definition_id, :rootfs, :memory_mb, :disk_mb, :max_pids, :log_guid, :placement_tags,
     :volume_drivers, :run_info, :protobuf)`

// definitionAsDef selects a definition (alias d) into desiredWithDefinition.Def.
const definitionAsDef = `d.process_guid AS "def.process_guid", d.definition_id AS "def.definition_id",
    d.rootfs AS "def.rootfs", d.memory_mb AS "def.memory_mb", d.disk_mb AS "def.disk_mb",
    d.max_pids AS "def.max_pids", d.log_guid AS "def.log_guid", d.placement_tags AS "def.placement_tags",
    d.run_info AS "def.run_info", d.protobuf AS "def.protobuf"`

// definitionColumns are what cells need of a definition (alias d): not the protobuf, which
// only the BBS protocol answers with.
const definitionColumns = `d.process_guid, d.definition_id, d.rootfs, d.memory_mb, d.disk_mb, d.max_pids,
    d.log_guid, d.placement_tags, d.run_info`
