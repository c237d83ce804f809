package model

// CellCapacity is what a cell can hold.
type CellCapacity struct {
	MemoryMB   int32 `json:"memory_mb"`
	DiskMB     int32 `json:"disk_mb"`
	Containers int32 `json:"containers"`
}

// CellPresence is a cell agent's announcement of itself, kept fresh with a TTL.
type CellPresence struct {
	CellID        string       `json:"cell_id"`
	Zone          string       `json:"zone"`
	RepAddress    string       `json:"rep_address"`
	Capacity      CellCapacity `json:"capacity"`
	PlacementTags []string     `json:"placement_tags,omitempty"`
	// Evacuating is set while the cell drains: it takes no new work.
	Evacuating bool `json:"evacuating,omitempty"`
}

// Validate checks a cell's announcement.
func (c *CellPresence) Validate() error {
	if err := ValidateGUID("cell_id", c.CellID); err != nil {
		return err
	}
	if c.Zone == "" {
		return invalid("zone is required")
	}
	if c.RepAddress == "" {
		return invalid("rep_address is required")
	}
	if c.Capacity.MemoryMB < 0 || c.Capacity.DiskMB < 0 || c.Capacity.Containers < 0 {
		return invalid("capacity must not be negative")
	}
	return nil
}
