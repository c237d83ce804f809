package api

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// DomainStore is what the domain routes need of the database.
type DomainStore interface {
	UpsertDomain(ctx context.Context, d model.Domain) error
	FreshDomains(ctx context.Context) ([]string, error)
}

// domainHandlers serve the domain routes.
type domainHandlers struct{ store DomainStore }

type upsertDomainRequest struct {
	model.Domain
}

type listDomainsRequest struct{}

type domainsResponse struct {
	Domains []string `json:"domains"`
}

type emptyResponse struct{}

func (h *domainHandlers) upsertDomain(ctx context.Context, req *upsertDomainRequest) (emptyResponse, error) {
	return emptyResponse{}, h.store.UpsertDomain(ctx, req.Domain)
}

func (h *domainHandlers) listDomains(ctx context.Context, _ *listDomainsRequest) (domainsResponse, error) {
	names, err := h.store.FreshDomains(ctx)
	return domainsResponse{Domains: names}, err
}
