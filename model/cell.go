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
}
