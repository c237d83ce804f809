package tpswatcher

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Cloud Controller's internal routes the watcher posts to, and its timeout per request
// (tps's cc_client).
const (
	crashedPath      = "/internal/v4/apps/%s/crashed"
	reschedulingPath = "/internal/v4/apps/%s/rescheduling"
	readinessPath    = "/internal/v4/apps/%s/readiness_changed"
	ccRequestTimeout = 5 * time.Second
)

// AppCrashed is Cloud Controller's AppCrashedRequest (runtimeschema's cc_messages), with
// which definition crashed (seed 001): its id, and whether it is the LRP's current
// (active) definition or the previous one a rollout is replacing.
type AppCrashed struct {
	Instance        string `json:"instance"`
	Index           int    `json:"index"`
	CellID          string `json:"cell_id"`
	Reason          string `json:"reason"`
	ExitStatus      int    `json:"exit_status,omitempty"`
	ExitDescription string `json:"exit_description,omitempty"`
	CrashCount      int    `json:"crash_count"`
	CrashTimestamp  int64  `json:"crash_timestamp"`
	DefinitionID    string `json:"definition_id,omitempty"`
	// Definition is "current" or "previous"; empty when the LRP is gone or the definition
	// is neither.
	Definition string `json:"definition,omitempty"`
}

// Definition roles of AppCrashed.Definition.
const (
	DefinitionCurrent  = "current"
	DefinitionPrevious = "previous"
)

// AppRescheduling is Cloud Controller's AppReschedulingRequest: an instance moved off an
// evacuating cell.
type AppRescheduling struct {
	Instance     string `json:"instance"`
	Index        int    `json:"index"`
	CellID       string `json:"cell_id"`
	Reason       string `json:"reason"`
	DefinitionID string `json:"definition_id,omitempty"`
}

// AppReadinessChanged is Cloud Controller's AppReadinessChangedRequest: an instance's
// readiness checks started or stopped passing (BBS's routable changed).
type AppReadinessChanged struct {
	Instance string `json:"instance"`
	Index    int    `json:"index"`
	CellID   string `json:"cell_id"`
	Ready    bool   `json:"ready"`
}

// CCClient posts to Cloud Controller's internal API.
type CCClient struct {
	base string
	http *http.Client
}

// NewCCClient returns a client for the Cloud Controller at baseURL; tlsConfig (nil for
// plain HTTP) carries the client certificate Cloud Controller's internal API asks for.
func NewCCClient(baseURL string, tlsConfig *tls.Config) *CCClient {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	return &CCClient{base: strings.TrimRight(baseURL, "/"), http: &http.Client{Transport: tr, Timeout: ccRequestTimeout}}
}

// AppCrashed reports a crash of the process guid's instance.
func (c *CCClient) AppCrashed(ctx context.Context, guid string, r AppCrashed) error {
	return c.post(ctx, fmt.Sprintf(crashedPath, url.PathEscape(guid)), r)
}

// AppRescheduling reports an instance moved off an evacuating cell.
func (c *CCClient) AppRescheduling(ctx context.Context, guid string, r AppRescheduling) error {
	return c.post(ctx, fmt.Sprintf(reschedulingPath, url.PathEscape(guid)), r)
}

// AppReadinessChanged tells Cloud Controller an instance became ready or not ready.
func (c *CCClient) AppReadinessChanged(ctx context.Context, guid string, r AppReadinessChanged) error {
	return c.post(ctx, fmt.Sprintf(readinessPath, url.PathEscape(guid)), r)
}

// BadResponseError is a Cloud Controller answer other than 200 (tps's BadResponseError).
type BadResponseError struct{ StatusCode int }

func (e *BadResponseError) Error() string {
	return fmt.Sprintf("Cloud Controller answered %d", e.StatusCode)
}

func (c *CCClient) post(ctx context.Context, path string, body any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return &BadResponseError{StatusCode: res.StatusCode}
	}
	return nil
}
