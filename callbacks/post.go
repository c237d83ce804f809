// Package callbacks delivers tasks' completion callbacks (BBS's task completion workers): a
// bounded pool in each worker process claims the completed tasks that have a callback,
// POSTs each the moment it completes, and deletes those the receiver answered, with the
// task's row as the durable record (db/task_callback.go). A receiver that stays down is
// handed over to a Temporal workflow after a few quick attempts (workflows/task_callback.go),
// so that its attempts and last error show in the Web UI for as long as it is retried.
package callbacks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// Timeout bounds one callback request (BBS's default is 1 minute).
const Timeout = time.Minute

// Answer is how a receiver took a callback.
type Answer struct {
	// Status is the receiver's HTTP status; 0 when it did not answer.
	Status int
	// Retry says the delivery is worth trying again: the receiver could not be reached, timed
	// out, or answered 503 or 504. Any other answer ends the delivery, as it does in BBS: a
	// 2xx is a success, anything else a refusal no retry would change.
	Retry bool
	// Err says what went wrong: the request failed, the receiver answered a status that is
	// retried or refused, or the callback cannot be sent at all (then Retry is false).
	Err error
}

// Post POSTs a task's TaskCallbackResponse to url with client and says how the receiver took
// it. The body is drained (up to 64 KiB) so that the connection is reused.
func Post(ctx context.Context, client *http.Client, url string, body model.TaskCallbackResponse) Answer {
	raw, err := json.Marshal(body)
	if err != nil {
		return Answer{Err: fmt.Errorf("encode the callback of task %s: %w", body.TaskGUID, err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return Answer{Err: model.Errorf(model.ErrInvalidRequest, "callback URL %q: %v", url, err)}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return Answer{Retry: true, Err: fmt.Errorf("callback request failed: %w", err)}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout:
		return Answer{Status: resp.StatusCode, Retry: true, Err: fmt.Errorf("callback receiver answered %d", resp.StatusCode)}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return Answer{Status: resp.StatusCode, Err: fmt.Errorf("callback receiver refused the result with %d", resp.StatusCode)}
	}
	return Answer{Status: resp.StatusCode}
}

// NewHTTPClient is the client a pool of size deliveries sends with: the default transport
// (proxies from the environment, HTTP/2, TLS), keeping enough idle connections per host
// that callbacks to one receiver (Cloud Controller) reuse them rather than open one each.
func NewHTTPClient(size int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = size
	t.MaxIdleConns = size
	return &http.Client{Transport: t, Timeout: Timeout}
}
