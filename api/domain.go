package api

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

type upsertDomainRequest struct {
	model.Domain
}

type listDomainsRequest struct{}

type domainsResponse struct {
	Domains []string `json:"domains"`
}

type emptyResponse struct{}

func (s *Server) upsertDomain(ctx context.Context, req *upsertDomainRequest) (emptyResponse, error) {
	return emptyResponse{}, s.store.UpsertDomain(ctx, req.Domain)
}

func (s *Server) listDomains(ctx context.Context, _ *listDomainsRequest) (domainsResponse, error) {
	names, err := s.store.FreshDomains(ctx)
	return domainsResponse{Domains: names}, err
}
