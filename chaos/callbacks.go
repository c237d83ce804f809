package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// Callbacks receives tasks' completion callbacks, as Cloud Controller does, answering 200 to
// each, and counts them per task.
type Callbacks struct {
	URL string
	srv *http.Server

	mu  sync.Mutex
	got map[string]int
}

// StartCallbacks listens on a loopback port of its own.
func StartCallbacks() (*Callbacks, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	cb := &Callbacks{URL: "http://" + ln.Addr().String(), got: map[string]int{}}
	cb.srv = &http.Server{Handler: http.HandlerFunc(cb.receive), ReadHeaderTimeout: 5 * time.Second}
	go cb.srv.Serve(ln)
	return cb, nil
}

func (cb *Callbacks) receive(w http.ResponseWriter, r *http.Request) {
	var body model.TaskCallbackResponse
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &body); err != nil || body.TaskGUID == "" {
		http.Error(w, "not a task callback", http.StatusBadRequest)
		return
	}
	cb.mu.Lock()
	cb.got[body.TaskGUID]++
	cb.mu.Unlock()
}

// Count is how many callbacks a task has had.
func (cb *Callbacks) Count(taskGUID string) int {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.got[taskGUID]
}

// Close stops receiving.
func (cb *Callbacks) Close() { cb.srv.Close() }

// DesireTask desires a task that sleeps for a while (so that it runs through a fault) and
// then succeeds, its callback to the receiver.
func (cb *Callbacks) DesireTask(ctx context.Context, c *Cluster, guid string, sleep time.Duration) error {
	t := &model.Task{TaskGUID: guid, Domain: "chaos-tasks", TaskDefinition: model.TaskDefinition{
		RootFS: "preloaded:cflinuxfs4", MemoryMB: 16, DiskMB: 16,
		Action:                &model.Action{Run: &model.RunAction{Path: "/bin/sh", Args: []string{"-c", fmt.Sprintf("sleep %g", sleep.Seconds())}}},
		CompletionCallbackURL: cb.URL + "/tasks/" + guid + "/completed",
	}}
	return write(ctx, func(ctx context.Context) error { _, err := c.BBS.DesireTask(ctx, t); return err }, model.ErrResourceExists)
}
