package api

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

type listCellsRequest struct{}

type cellsResponse struct {
	Cells []model.CellPresence `json:"cells"`
}

func (s *Server) listCells(ctx context.Context, _ *listCellsRequest) (cellsResponse, error) {
	cells, err := s.store.Cells(ctx)
	return cellsResponse{Cells: cells}, err
}
