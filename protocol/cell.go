package protocol

import (
	"context"
	"strings"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/types/known/emptypb"
)

// CellStore is what the cell route reads of the store.
type CellStore interface {
	Cells(ctx context.Context) ([]model.CellPresence, error)
}

// cells lists the cells whose presence is fresh (BBS reads them from Locket; ours keep their
// presence in the store).
func (s *Server) cells(ctx context.Context, _ *emptypb.Empty) (*pb.CellsResponse, error) {
	cells, err := s.store.Cells(ctx)
	if err != nil {
		return nil, err
	}
	resp := &pb.CellsResponse{Cells: make([]*pb.CellPresence, len(cells))}
	for i, c := range cells {
		resp.Cells[i] = cellPresence(c)
	}
	return resp, nil
}

// cellPresence is a cell as BBS describes it. Our cells announce one URL: it is the rep's
// address, and its rep_url too when it is https (BBS's rep_url is the TLS one).
func cellPresence(c model.CellPresence) *pb.CellPresence {
	p := &pb.CellPresence{
		CellId:     c.CellID,
		RepAddress: c.RepAddress,
		Zone:       c.Zone,
		Capacity: &pb.CellCapacity{
			MemoryMb:   c.Capacity.MemoryMB,
			DiskMb:     c.Capacity.DiskMB,
			Containers: c.Capacity.Containers,
		},
		PlacementTags: c.PlacementTags,
	}
	if strings.HasPrefix(c.RepAddress, "https://") {
		p.RepUrl = c.RepAddress
	}
	return p
}
