package protocol

import (
	"context"
	"time"

	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/types/known/emptypb"
)

// ping answers whether the BBS can serve: schema in place (a server that is not ready
// answers 503 before it gets here) and database answering.
func (s *Server) ping(ctx context.Context, _ *emptypb.Empty) (*pb.PingResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return &pb.PingResponse{Available: s.store.Ping(ctx) == nil}, nil
}
