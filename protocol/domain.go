package protocol

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/types/known/emptypb"
)

// DomainStore is what the domain routes read and write of the store.
type DomainStore interface {
	UpsertDomain(ctx context.Context, d model.Domain) error
	FreshDomains(ctx context.Context) ([]string, error)
}

// upsertDomain keeps a domain fresh for ttl seconds (0: for good). BBS asks only for a
// name, and takes any TTL a uint32 holds (136 years at most).
func (s *Server) upsertDomain(ctx context.Context, req *pb.UpsertDomainRequest) (*pb.UpsertDomainResponse, error) {
	// BBS asks only for a name; ours must also fit the store's key (as the JSON API's).
	if req.GetDomain() == "" || len(req.GetDomain()) > model.MaxGUIDLength {
		return nil, invalidFields("domain")
	}
	return &pb.UpsertDomainResponse{}, s.store.UpsertDomain(ctx, model.Domain{Name: req.GetDomain(), TTL: int64(req.GetTtl())})
}

// domains lists the fresh domains.
func (s *Server) domains(ctx context.Context, _ *emptypb.Empty) (*pb.DomainsResponse, error) {
	names, err := s.store.FreshDomains(ctx)
	if err != nil {
		return nil, err
	}
	return &pb.DomainsResponse{Domains: names}, nil
}
