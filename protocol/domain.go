package protocol

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/types/known/emptypb"
)

// upsertDomain keeps a domain fresh for ttl seconds (0: for good), as the JSON route does.
func (s *Server) upsertDomain(ctx context.Context, req *pb.UpsertDomainRequest) (*pb.UpsertDomainResponse, error) {
	d := model.Domain{Name: req.GetDomain(), TTL: int64(req.GetTtl())}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &pb.UpsertDomainResponse{}, s.store.UpsertDomain(ctx, d)
}

// domains lists the fresh domains.
func (s *Server) domains(ctx context.Context, _ *emptypb.Empty) (*pb.DomainsResponse, error) {
	names, err := s.store.FreshDomains(ctx)
	if err != nil {
		return nil, err
	}
	return &pb.DomainsResponse{Domains: names}, nil
}
