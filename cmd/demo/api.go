package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// apiClient calls the few BBS routes the demo needs (API.md), including the rollout routes
// bbsclient does not cover. Errors the API answers come back as *model.Error.
type apiClient struct {
	base string
	http *http.Client
}

func newAPIClient(base string) *apiClient {
	return &apiClient{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: 30 * time.Second}}
}

// post sends req as JSON to path and decodes a 200 answer into resp (when non-nil).
func (c *apiClient) post(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error *model.Error `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error != nil {
			return e.Error
		}
		return fmt.Errorf("POST %s: status %d: %.200s", path, res.StatusCode, raw)
	}
	if resp == nil {
		return nil
	}
	return json.Unmarshal(raw, resp)
}

// available reports whether the API answers /v1/ping with available: true. A transport
// error (nothing listening) is returned as such.
func (c *apiClient) available(ctx context.Context) (bool, error) {
	var resp struct {
		Available bool `json:"available"`
	}
	if err := c.post(ctx, "/v1/ping", struct{}{}, &resp); err != nil {
		if _, answered := err.(*model.Error); answered {
			return false, nil
		}
		return false, err
	}
	return resp.Available, nil
}

func (c *apiClient) upsertDomain(ctx context.Context, domain string) error {
	return c.post(ctx, "/v1/domains/upsert", map[string]any{"domain": domain, "ttl": 0}, nil)
}

func (c *apiClient) desire(ctx context.Context, d *model.DesiredLRP) error {
	return c.post(ctx, "/v1/desired_lrp/desire", map[string]any{"desired_lrp": d}, nil)
}

func (c *apiClient) exists(ctx context.Context, guid string) (bool, error) {
	err := c.post(ctx, "/v1/desired_lrps/get_by_process_guid", map[string]string{"process_guid": guid}, nil)
	if model.IsType(err, model.ErrResourceNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (c *apiClient) updateDefinition(ctx context.Context, guid string, def *model.LRPDefinition) error {
	return c.post(ctx, "/v1/desired_lrp/update", map[string]any{"process_guid": guid,
		"update": model.DesiredLRPUpdate{Definition: def}}, nil)
}

func (c *apiClient) cancelUpdate(ctx context.Context, guid string) error {
	return c.post(ctx, "/v1/desired_lrp/cancel_update", map[string]string{"process_guid": guid}, nil)
}

func (c *apiClient) rollback(ctx context.Context, guid, definitionID string) error {
	return c.post(ctx, "/v1/desired_lrp/rollback", map[string]string{"process_guid": guid, "definition_id": definitionID}, nil)
}

func (c *apiClient) remove(ctx context.Context, guid string) error {
	return c.post(ctx, "/v1/desired_lrp/remove", map[string]string{"process_guid": guid}, nil)
}

// rollout returns the LRP's active rollout, else its latest.
func (c *apiClient) rollout(ctx context.Context, guid string) (*model.Rollout, error) {
	var resp struct {
		Rollout *model.Rollout `json:"rollout"`
	}
	if err := c.post(ctx, "/v1/rollouts/get", map[string]string{"process_guid": guid}, &resp); err != nil {
		return nil, err
	}
	if resp.Rollout == nil {
		return nil, fmt.Errorf("no rollout in the answer")
	}
	return resp.Rollout, nil
}

func (c *apiClient) instances(ctx context.Context, guid string) ([]model.ActualLRP, error) {
	var resp struct {
		ActualLRPs []model.ActualLRP `json:"actual_lrps"`
	}
	err := c.post(ctx, "/v1/actual_lrps/list", model.ActualLRPFilter{ProcessGUID: guid}, &resp)
	return resp.ActualLRPs, err
}

func (c *apiClient) cells(ctx context.Context) (int, error) {
	var resp struct {
		Cells []json.RawMessage `json:"cells"`
	}
	err := c.post(ctx, "/v1/cells/list", struct{}{}, &resp)
	return len(resp.Cells), err
}

// routerStats is the router's GET /stats (router.Stats).
type routerStats struct {
	Requests int64          `json:"requests"`
	Retries  int64          `json:"retries"`
	Failures int64          `json:"failures"`
	Hosts    map[string]int `json:"hosts"`
}

func readRouterStats(ctx context.Context, c *http.Client, url string) (*routerStats, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := c.Do(r)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, res.Status)
	}
	var s routerStats
	return &s, json.NewDecoder(res.Body).Decode(&s)
}
