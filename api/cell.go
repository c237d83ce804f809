package api

import (
	"context"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// CellStore is what the cell presence routes need of the database.
type CellStore interface {
	Cells(ctx context.Context) ([]model.CellPresence, error)
	UpsertCell(ctx context.Context, c model.CellPresence, ttl time.Duration) error
	RemoveCell(ctx context.Context, cellID string) error
}

// cellHandlers serve the cell presence routes: the cells' heartbeats and the list placement
// and operators read.
type cellHandlers struct{ store CellStore }

type listCellsRequest struct{}

type cellsResponse struct {
	Cells []model.CellPresence `json:"cells"`
}

func (h *cellHandlers) listCells(ctx context.Context, _ *listCellsRequest) (cellsResponse, error) {
	cells, err := h.store.Cells(ctx)
	return cellsResponse{Cells: cells}, err
}

// DefaultCellTTL is how long a cell's presence lasts without a heartbeat when it names no TTL.
const DefaultCellTTL = 10 * time.Second

type cellHeartbeatRequest struct {
	Cell *model.CellPresence `json:"cell_presence"`
	// TTL is in seconds; 0 means DefaultCellTTL.
	TTL int64 `json:"ttl"`
}

func (r *cellHeartbeatRequest) Validate() error {
	if r.Cell == nil {
		return model.Errorf(model.ErrInvalidRequest, "cell_presence is required")
	}
	if r.TTL < 0 || r.TTL > 3600 {
		return model.Errorf(model.ErrInvalidRequest, "ttl must be between 0 and 3600 seconds")
	}
	return r.Cell.Validate()
}

type cellIDRequest struct {
	CellID string `json:"cell_id"`
}

func (r *cellIDRequest) Validate() error { return model.ValidateGUID("cell_id", r.CellID) }

func (h *cellHandlers) cellHeartbeat(ctx context.Context, req *cellHeartbeatRequest) (emptyResponse, error) {
	ttl := DefaultCellTTL
	if req.TTL > 0 {
		ttl = time.Duration(req.TTL) * time.Second
	}
	return emptyResponse{}, h.store.UpsertCell(ctx, *req.Cell, ttl)
}

func (h *cellHandlers) removeCell(ctx context.Context, req *cellIDRequest) (emptyResponse, error) {
	return emptyResponse{}, h.store.RemoveCell(ctx, req.CellID)
}
