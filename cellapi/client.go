package cellapi

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

// Client calls cells' APIs: the auctioneer hands out work with it, the BBS asks for stops.
// One Client serves every cell; each call names the cell by its rep address.
type Client struct {
	http *http.Client
}

// NewClient returns a client; tlsConfig may be nil for loopback cells.
func NewClient(tlsConfig *tls.Config) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	// An auctioneer talks to every cell of the fleet each few rounds: the default pool (100
	// idle connections in all) had it dial most cells afresh each round (with mutual TLS, a
	// handshake each) once a fleet passed a hundred cells. A few per cell, no total bound.
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = 16
	return &Client{http: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// Perform hands work to the cell at repURL and returns what it refused.
func (c *Client) Perform(ctx context.Context, repURL string, work PerformRequest) (*PerformResponse, error) {
	var resp PerformResponse
	if err := c.do(ctx, http.MethodPost, repURL, WorkPath, work, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// CancelTask asks the cell at repURL to stop a task's container.
func (c *Client) CancelTask(ctx context.Context, repURL, guid string) error {
	return c.do(ctx, http.MethodPost, repURL, CancelTaskPath, TaskGUIDRequest{TaskGUID: guid}, nil)
}

// Stop asks the cell at repURL to stop an instance.
func (c *Client) Stop(ctx context.Context, repURL string, req StopRequest) error {
	return c.do(ctx, http.MethodPost, repURL, StopPath, req, nil)
}

// Evacuate tells the cell at repURL to drain.
func (c *Client) Evacuate(ctx context.Context, repURL string) error {
	return c.do(ctx, http.MethodPost, repURL, EvacuatePath, struct{}{}, nil)
}

// State reads what the cell at repURL holds.
func (c *Client) State(ctx context.Context, repURL string) (*State, error) {
	var st State
	if err := c.do(ctx, http.MethodGet, repURL, StatePath, nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// StatusError is a cell's answer other than 200. It tells a cell that answered (and refused)
// from one that could not be reached, which the Stopper treats differently; it unwraps to the
// cell's model error when the body carried one.
type StatusError struct {
	Method, URL string
	StatusCode  int
	Body        string
	// Err is the error the cell sent, nil when the body was not {"error": ...}.
	Err *model.Error
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: status %d: %.200s", e.Method, e.URL, e.StatusCode, e.Body)
}

// Unwrap lets model.IsType see the cell's error type (e.g. ResourceNotFound: no container).
func (e *StatusError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}

func (c *Client) do(ctx context.Context, method, repURL, path string, req, resp any) error {
	var body io.Reader
	if req != nil {
		b, err := json.Marshal(req)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	url := strings.TrimRight(repURL, "/") + path
	r, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	if req != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if res.StatusCode != http.StatusOK {
		se := &StatusError{Method: method, URL: url, StatusCode: res.StatusCode, Body: string(raw)}
		var e struct {
			Error *model.Error `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error != nil && e.Error.Type != "" {
			se.Err = e.Error
		}
		return se
	}
	if resp != nil {
		return json.Unmarshal(raw, resp)
	}
	return nil
}
