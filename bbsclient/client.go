// Package bbsclient is a Go client for the BBS HTTP API (API.md), used by the cell agents and
// by tests. Errors the API answers come back as *model.Error, so callers branch on their type.
package bbsclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// Client calls one BBS API.
type Client struct {
	base string
	http *http.Client
}

// New returns a client for the API at baseURL (e.g. http://127.0.0.1:8889). tlsConfig may be
// nil for a plain loopback API.
func New(baseURL string, tlsConfig *tls.Config) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	tr.MaxIdleConnsPerHost = 64
	return &Client{base: strings.TrimRight(baseURL, "/"), http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// post sends req as JSON to path and decodes the answer into resp (when non-nil).
func (c *Client) post(ctx context.Context, path string, req, resp any) error {
	body := []byte("{}")
	if req != nil {
		var err error
		if body, err = json.Marshal(req); err != nil {
			return err
		}
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(r)
	if err != nil {
		// Unavailable for callers that look at the type; the transport error (a *url.Error)
		// stays the cause, for callers that must tell "no answer" from the API's own 503.
		return fmt.Errorf("%w: %w", &model.Error{Type: model.ErrUnavailable, Message: "POST " + path + ": no answer"}, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 256<<20))
	if err != nil {
		return &model.Error{Type: model.ErrUnavailable, Message: err.Error()}
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
	if resp != nil {
		return json.Unmarshal(raw, resp)
	}
	return nil
}

// InstanceRequest names an instance and, for writes by a cell, the cell's instance key.
type InstanceRequest struct {
	Key             model.ActualLRPKey          `json:"actual_lrp_key"`
	InstanceKey     *model.ActualLRPInstanceKey `json:"actual_lrp_instance_key,omitempty"`
	NetInfo         *model.ActualLRPNetInfo     `json:"actual_lrp_net_info,omitempty"`
	ErrorMessage    string                      `json:"error_message,omitempty"`
	ModificationTag *model.ModificationTag      `json:"modification_tag,omitempty"`
	// Routable, in a start, is false while the instance's readiness checks do not pass.
	Routable *bool `json:"routable,omitempty"`
}

type actualLRPResponse struct {
	ActualLRP *model.ActualLRP `json:"actual_lrp"`
}

func (c *Client) lifecycle(ctx context.Context, route string, req InstanceRequest) (*model.ActualLRP, error) {
	var resp actualLRPResponse
	if err := c.post(ctx, "/v1/actual_lrps/"+route, req, &resp); err != nil {
		return nil, err
	}
	return resp.ActualLRP, nil
}

// ClaimActualLRP records that this cell is starting the instance.
func (c *Client) ClaimActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) (*model.ActualLRP, error) {
	return c.lifecycle(ctx, "claim", InstanceRequest{Key: key, InstanceKey: &ik})
}

// StartActualLRP records that the instance of req.Key runs on the cell of req.InstanceKey at
// req.NetInfo (and, with Routable false, that its readiness checks do not pass).
func (c *Client) StartActualLRP(ctx context.Context, req InstanceRequest) (*model.ActualLRP, error) {
	return c.lifecycle(ctx, "start", req)
}

// BatchResult is one instance's answer in a batch report: the error its single route would
// have returned, if any. The client asks for errors only (errors_only): a cell needs no more.
type BatchResult struct {
	Error *model.Error `json:"error,omitempty"`
}

// Err is the instance's error, nil when its write was taken.
func (r BatchResult) Err() error {
	if r.Error == nil {
		return nil
	}
	return r.Error
}

// batchSize is how many instances go in one batch report: the API takes up to 1,000, and
// 250 keeps a request well below its 1 MiB limit however long the guids.
const batchSize = 250

// ClaimActualLRPs claims many instances for this cell (Key and InstanceKey of each report),
// in requests of up to 250; the results are in the order of the reports. On an error, the
// results of the requests that went through are returned with it.
func (c *Client) ClaimActualLRPs(ctx context.Context, reports []InstanceRequest) ([]BatchResult, error) {
	return c.batch(ctx, "claim_batch", reports)
}

// StartActualLRPs records many instances running on this cell (Key, InstanceKey and NetInfo
// of each report), in requests of up to 250; the results are in the order of the reports,
// and partial on an error, as for ClaimActualLRPs.
func (c *Client) StartActualLRPs(ctx context.Context, reports []InstanceRequest) ([]BatchResult, error) {
	return c.batch(ctx, "start_batch", reports)
}

func (c *Client) batch(ctx context.Context, route string, reports []InstanceRequest) ([]BatchResult, error) {
	out := make([]BatchResult, 0, len(reports))
	for len(reports) > 0 {
		n := min(len(reports), batchSize)
		var resp struct {
			Results []BatchResult `json:"results"`
		}
		if err := c.post(ctx, "/v1/actual_lrps/"+route, struct {
			Instances  []InstanceRequest `json:"instances"`
			ErrorsOnly bool              `json:"errors_only"`
		}{reports[:n], true}, &resp); err != nil {
			return out, err
		}
		if len(resp.Results) != n {
			return out, fmt.Errorf("POST /v1/actual_lrps/%s: %d results for %d instances", route, len(resp.Results), n)
		}
		out = append(out, resp.Results...)
		reports = reports[n:]
	}
	return out, nil
}

// CrashActualLRP records that the instance crashed, with why.
func (c *Client) CrashActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey, reason string) (*model.ActualLRP, error) {
	return c.lifecycle(ctx, "crash", InstanceRequest{Key: key, InstanceKey: &ik, ErrorMessage: reason})
}

// FailActualLRP records why an UNCLAIMED instance could not be placed.
func (c *Client) FailActualLRP(ctx context.Context, key model.ActualLRPKey, reason string) (*model.ActualLRP, error) {
	return c.lifecycle(ctx, "fail", InstanceRequest{Key: key, ErrorMessage: reason})
}

// UnclaimActualLRP hands an instance this cell claimed or ran back for placement.
func (c *Client) UnclaimActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) (*model.ActualLRP, error) {
	return c.lifecycle(ctx, "unclaim", InstanceRequest{Key: key, InstanceKey: &ik})
}

// RemoveActualLRP deletes the instance record this cell owns (ik) or any (nil).
func (c *Client) RemoveActualLRP(ctx context.Context, key model.ActualLRPKey, ik *model.ActualLRPInstanceKey) error {
	return c.post(ctx, "/v1/actual_lrps/remove", InstanceRequest{Key: key, InstanceKey: ik}, nil)
}

// ClaimStop claims the stop of a retiring instance this cell holds, once its drain is over:
// stop is false when its retirement was withdrawn (it serves on), true otherwise — and from
// then on the retirement cannot be withdrawn.
func (c *Client) ClaimStop(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) (stop bool, err error) {
	var resp struct {
		Stop bool `json:"stop"`
	}
	err = c.post(ctx, "/v1/actual_lrps/claim_stop", InstanceRequest{Key: key, InstanceKey: &ik}, &resp)
	return resp.Stop, err
}

// EvacuateRunningActualLRP moves a RUNNING instance of a draining cell to EVACUATING while
// a replacement is placed. keep says whether the cell should keep running it for now.
func (c *Client) EvacuateRunningActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey, net model.ActualLRPNetInfo) (keep bool, err error) {
	var resp struct {
		KeepContainer bool `json:"keep_container"`
	}
	err = c.post(ctx, "/v1/actual_lrps/evacuate_running", InstanceRequest{Key: key, InstanceKey: &ik, NetInfo: &net}, &resp)
	return resp.KeepContainer, err
}

// RemoveEvacuatingActualLRP deletes this cell's EVACUATING record of the instance.
func (c *Client) RemoveEvacuatingActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) error {
	return c.post(ctx, "/v1/actual_lrps/remove_evacuating", InstanceRequest{Key: key, InstanceKey: &ik}, nil)
}

// ActualLRPs lists instances matching f.
func (c *Client) ActualLRPs(ctx context.Context, f model.ActualLRPFilter) ([]model.ActualLRP, error) {
	var resp struct {
		ActualLRPs []model.ActualLRP `json:"actual_lrps"`
	}
	err := c.post(ctx, "/v1/actual_lrps/list", f, &resp)
	return resp.ActualLRPs, err
}

// Heartbeat announces the cell, fresh for ttl.
func (c *Client) Heartbeat(ctx context.Context, cell model.CellPresence, ttl time.Duration) error {
	return c.post(ctx, "/v1/cells/heartbeat", map[string]any{"cell_presence": cell, "ttl": int64(ttl / time.Second)}, nil)
}

// RemoveCell withdraws the cell's presence on a clean shutdown.
func (c *Client) RemoveCell(ctx context.Context, cellID string) error {
	return c.post(ctx, "/v1/cells/remove", map[string]string{"cell_id": cellID}, nil)
}

// Cells lists the fresh cells.
func (c *Client) Cells(ctx context.Context) ([]model.CellPresence, error) {
	var resp struct {
		Cells []model.CellPresence `json:"cells"`
	}
	err := c.post(ctx, "/v1/cells/list", nil, &resp)
	return resp.Cells, err
}

// DesireLRP creates an LRP.
func (c *Client) DesireLRP(ctx context.Context, d *model.DesiredLRP) error {
	return c.post(ctx, "/v1/desired_lrp/desire", map[string]any{"desired_lrp": d}, nil)
}

// UpdateDesiredLRP changes an LRP.
func (c *Client) UpdateDesiredLRP(ctx context.Context, guid string, u *model.DesiredLRPUpdate) error {
	return c.post(ctx, "/v1/desired_lrp/update", map[string]any{"process_guid": guid, "update": u}, nil)
}

// RemoveDesiredLRP removes an LRP.
func (c *Client) RemoveDesiredLRP(ctx context.Context, guid string) error {
	return c.post(ctx, "/v1/desired_lrp/remove", map[string]string{"process_guid": guid}, nil)
}

// DesiredLRPByProcessGUID reads an LRP; ResourceNotFound when there is none.
func (c *Client) DesiredLRPByProcessGUID(ctx context.Context, guid string) (*model.DesiredLRP, error) {
	var resp struct {
		DesiredLRP *model.DesiredLRP `json:"desired_lrp"`
	}
	err := c.post(ctx, "/v1/desired_lrps/get_by_process_guid", map[string]string{"process_guid": guid}, &resp)
	return resp.DesiredLRP, err
}

// CancelUpdate rolls an LRP's updated instances back to the previous definition;
// NoUpdateInProgress when nothing is rolling out.
func (c *Client) CancelUpdate(ctx context.Context, guid string) error {
	return c.post(ctx, "/v1/desired_lrp/cancel_update", map[string]string{"process_guid": guid}, nil)
}

// Rollback rolls an LRP to a stored earlier definition.
func (c *Client) Rollback(ctx context.Context, guid, definitionID string) error {
	return c.post(ctx, "/v1/desired_lrp/rollback", map[string]string{"process_guid": guid, "definition_id": definitionID}, nil)
}

// Ping reports whether the API is available (its schema migrated). An error the API
// answered is a *model.Error; any other error means it could not be reached.
func (c *Client) Ping(ctx context.Context) (bool, error) {
	var resp struct {
		Available bool `json:"available"`
	}
	err := c.post(ctx, "/v1/ping", nil, &resp)
	return resp.Available, err
}

// UpsertDomain marks a domain fresh for ttl (0: forever).
func (c *Client) UpsertDomain(ctx context.Context, domain string, ttl time.Duration) error {
	return c.post(ctx, "/v1/domains/upsert", map[string]any{"domain": domain, "ttl": int64(ttl / time.Second)}, nil)
}

// LRPDeployments lists LRPs with all their definitions.
func (c *Client) LRPDeployments(ctx context.Context, f model.DesiredLRPFilter) ([]model.LRPDeployment, error) {
	var resp struct {
		LRPDeployments []model.LRPDeployment `json:"lrp_deployments"`
	}
	err := c.post(ctx, "/v1/lrp_deployments/list", f, &resp)
	return resp.LRPDeployments, err
}

// Events streams the BBS events (GET /v1/events/lrp_instances) until ctx ends or the
// stream breaks; the channel then closes. Callers resync after a break: events in between
// are not replayed.
func (c *Client) Events(ctx context.Context) (<-chan model.Event, error) {
	return c.EventsAfter(ctx, 0)
}

// EventsAfter is Events resumed after the event with id last (0: from now on), sent as the
// stream's Last-Event-ID: a server that keeps its event log replays the events since, so
// that a subscriber whose stream broke misses none.
func (c *Client) EventsAfter(ctx context.Context, last int64) (<-chan model.Event, error) {
	return c.stream(ctx, "/v1/events/lrp_instances", last)
}

// TaskEvents streams the task events (GET /v1/events/tasks) from now on, until ctx ends or
// the stream breaks; the channel then closes.
func (c *Client) TaskEvents(ctx context.Context) (<-chan model.Event, error) {
	return c.stream(ctx, "/v1/events/tasks", 0)
}

// stream reads the Server-Sent Events of path, resumed after the event with id last.
func (c *Client) stream(ctx context.Context, path string, last int64) (<-chan model.Event, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	if last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
	}
	streaming := &http.Client{Transport: c.http.Transport} // no overall timeout on a stream
	res, err := streaming.Do(req)
	if err != nil {
		return nil, &model.Error{Type: model.ErrUnavailable, Message: err.Error()}
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		return nil, fmt.Errorf("event stream: status %d", res.StatusCode)
	}
	out := make(chan model.Event, 256)
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		var e model.Event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				e.ID, _ = strconv.ParseInt(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				e.Name = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.Data = json.RawMessage(line[6:])
			case line == "" && e.Name != "":
				select {
				case out <- e:
				case <-ctx.Done():
					return
				}
				e = model.Event{}
			}
		}
	}()
	return out, nil
}
