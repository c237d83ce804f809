package cell

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// Work asks a cell to start one instance of a definition.
type Work struct {
	Key        model.ActualLRPKey  `json:"actual_lrp_key"`
	Definition model.LRPDefinition `json:"definition"`
}

// PerformResponse lists the work a cell refused (full, draining, or lost the claim).
type PerformResponse struct {
	Rejected []Rejection `json:"rejected"`
}

// Rejection is one refused piece of work and why.
type Rejection struct {
	Key    model.ActualLRPKey `json:"actual_lrp_key"`
	Reason string             `json:"reason"`
}

// StopRequest asks a cell to stop one instance.
type StopRequest struct {
	Key          model.ActualLRPKey `json:"actual_lrp_key"`
	InstanceGUID string             `json:"instance_guid"`
}

// Client calls cell agents (the auctioneer hands out work, the BBS asks for stops).
type Client struct {
	http *http.Client
}

// NewClient returns a client; tlsConfig may be nil for loopback cells.
func NewClient(tlsConfig *tls.Config) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	tr.MaxIdleConnsPerHost = 16
	return &Client{http: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// Perform hands work to the cell at repURL and returns what it refused.
func (c *Client) Perform(ctx context.Context, repURL string, work []Work) ([]Rejection, error) {
	var resp PerformResponse
	err := c.post(ctx, repURL+"/v1/work", map[string]any{"lrps": work}, &resp)
	return resp.Rejected, err
}

// Stop asks the cell at repURL to stop an instance.
func (c *Client) Stop(ctx context.Context, repURL string, req StopRequest) error {
	return c.post(ctx, repURL+"/v1/stop", req, nil)
}

// Evacuate tells the cell at repURL to drain.
func (c *Client) Evacuate(ctx context.Context, repURL string) error {
	return c.post(ctx, repURL+"/v1/evacuate", nil, nil)
}

func (c *Client) post(ctx context.Context, url string, req, resp any) error {
	body := []byte("{}")
	if req != nil {
		var err error
		if body, err = json.Marshal(req); err != nil {
			return err
		}
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(url, "/"), bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: status %d: %.200s", url, res.StatusCode, raw)
	}
	if resp != nil {
		return json.Unmarshal(raw, resp)
	}
	return nil
}

// CellLister finds cells' addresses.
type CellLister interface {
	Cells(ctx context.Context) ([]model.CellPresence, error)
}

// Stopper asks the cells that run instances to stop them: what the BBS does when an LRP is
// removed, scaled down or an instance retired. The cells then remove the records.
type Stopper struct {
	Cells  CellLister
	Client *Client
}

// StopInstances sends one stop per instance to its cell. Instances on cells that are gone
// are left to convergence.
func (s *Stopper) StopInstances(ctx context.Context, lrps []model.ActualLRP) error {
	cells, err := s.Cells.Cells(ctx)
	if err != nil {
		return err
	}
	addr := make(map[string]string, len(cells))
	for _, c := range cells {
		addr[c.CellID] = c.RepAddress
	}
	var firstErr error
	for _, a := range lrps {
		url, ok := addr[a.CellID]
		if !ok {
			continue
		}
		if err := s.Client.Stop(ctx, url, StopRequest{Key: a.ActualLRPKey, InstanceGUID: a.InstanceGUID}); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("stop %s/%d on %s: %w", a.ProcessGUID, a.Index, a.CellID, err)
		}
	}
	return firstErr
}
