package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ccStandIn plays Cloud Controller's side of staging: it receives the completion callbacks
// of tasks and, for a staging task that succeeded, desires the app from the droplet its
// result names (stage, then run).
type ccStandIn struct {
	*httptest.Server
	mu        sync.Mutex
	callbacks map[string][]callback
	// unavailable answers 503 while true, as a Cloud Controller that is restarting.
	unavailable bool
	// hold, while set, keeps each request waiting until it is closed, counted in held and
	// not in callbacks: its answer is for a worker that is killed meanwhile.
	hold chan struct{}
	held map[string]int
}

type callback struct {
	TaskGUID      string `json:"task_guid"`
	Failed        bool   `json:"failed"`
	FailureReason string `json:"failure_reason"`
	Result        string `json:"result"`
	Annotation    string `json:"annotation"`
}

func newCCStandIn(t *testing.T, d *devStack) *ccStandIn {
	cc := &ccStandIn{callbacks: map[string][]callback{}, held: map[string]int{}}
	cc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var cb callback
		if err := json.Unmarshal(body, &cb); err != nil {
			t.Errorf("callback %s: %v", body, err)
		}
		cc.mu.Lock()
		if hold := cc.hold; hold != nil {
			cc.held[cb.TaskGUID]++
			cc.mu.Unlock()
			<-hold
			return
		}
		if cc.unavailable {
			cc.mu.Unlock()
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		cc.callbacks[cb.TaskGUID] = append(cc.callbacks[cb.TaskGUID], cb)
		cc.mu.Unlock()
		if r.URL.Path != "/internal/v3/staging/"+cb.TaskGUID+"/build_completed" || cb.Failed {
			return
		}
		var result struct {
			Droplet string `json:"droplet"`
		}
		if err := json.Unmarshal([]byte(cb.Result), &result); err != nil || result.Droplet == "" {
			t.Errorf("staging result %q: %v", cb.Result, err)
			return
		}
		app := demoLRP(cb.Annotation, 2)
		app["action"] = obj{"run": obj{"path": result.Droplet}}
		if code := d.api.post("/v1/desired_lrp/desire", obj{"desired_lrp": app}, nil); code != http.StatusOK {
			t.Errorf("desire the staged app: status %d", code)
		}
	}))
	t.Cleanup(cc.Close)
	return cc
}

func (cc *ccStandIn) got(guid string) []callback {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return append([]callback(nil), cc.callbacks[guid]...)
}

// holdRequests keeps the requests waiting until the returned release.
func (cc *ccStandIn) holdRequests() (release func()) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.hold = make(chan struct{})
	return func() {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		close(cc.hold)
		cc.hold = nil
	}
}

func (cc *ccStandIn) heldCount() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.held)
}

func (cc *ccStandIn) setUnavailable(v bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.unavailable = v
}

// stagingTask builds a droplet: it copies the demo app into the blobstore and names it in
// its result file, as a buildpack's staging writes the droplet and its result.json.
func stagingTask(guid, app, blobstore, callbackBase string) obj {
	droplet := filepath.Join(blobstore, guid, "app")
	script := fmt.Sprintf(`set -e; mkdir -p %[1]s tmp; cp %[2]s %[3]s; printf '{"droplet":"%[3]s"}' > tmp/result.json`,
		filepath.Dir(droplet), demoBin, droplet)
	return obj{"task_guid": guid, "domain": "cf-app-staging", "rootfs": "preloaded:cflinuxfs4",
		"memory_mb": 64, "disk_mb": 64, "annotation": app,
		"action":                  obj{"run": obj{"path": "/bin/sh", "args": []string{"-c", script}}},
		"result_file":             "/tmp/result.json",
		"completion_callback_url": callbackBase + "/internal/v3/staging/" + guid + "/build_completed?start=true"}
}

// TestStageThenRun is Cloud Controller's cf push on our system with real processes: a
// staging task builds a droplet and returns its location through the completion callback;
// the receiver desires the app from it, which runs and is routed. A run-task-shaped task
// that fails delivers its failure reason.
func TestStageThenRun(t *testing.T) {
	d := startDev(t)
	cc := newCCStandIn(t, d)
	blobstore := t.TempDir()

	d.api.mustPost("/v1/tasks/desire", obj{"task": stagingTask("stage-1", "staged", blobstore, cc.URL)}, nil)
	d.waitFor(t, "the staging callback", 30*time.Second, func() bool { return len(cc.got("stage-1")) == 1 })
	if cb := cc.got("stage-1")[0]; cb.Failed {
		t.Fatalf("staging failed: %+v", cb)
	}
	d.waitFor(t, "the staged app to run", 30*time.Second, func() bool { return runningIndices(d.instances("staged")) == 2 })
	d.waitFor(t, "the router to route the staged app", 15*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", d.routerPort), nil)
		req.Host = "staged.example.com"
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	d.waitFor(t, "the staging task to be deleted", 15*time.Second, func() bool {
		return d.api.post("/v1/tasks/get_by_task_guid", obj{"task_guid": "stage-1"}, nil) == http.StatusNotFound
	})

	d.api.mustPost("/v1/tasks/desire", obj{"task": obj{"task_guid": "run-1", "domain": "cf-tasks",
		"rootfs": "preloaded:cflinuxfs4", "memory_mb": 32, "disk_mb": 32,
		"action":                  obj{"run": obj{"path": "/bin/sh", "args": []string{"-c", "echo migrating; exit 7"}}},
		"completion_callback_url": cc.URL + "/internal/v4/tasks/run-1/completed"}}, nil)
	d.waitFor(t, "the failed task's callback", 30*time.Second, func() bool { return len(cc.got("run-1")) == 1 })
	if cb := cc.got("run-1")[0]; !cb.Failed || cb.FailureReason == "" || cb.Result != "" {
		t.Fatalf("run-task callback: %+v", cb)
	}
	t.Logf("run-task failure reason: %s", cc.got("run-1")[0].FailureReason)
}

// TestCallbacksSurviveTheWorkerKilled kills the worker (SIGKILL) while callbacks wait on an
// unavailable receiver, and starts another: every callback is delivered exactly once.
func TestCallbacksSurviveTheWorkerKilled(t *testing.T) {
	d := startDev(t, "--no-worker")
	env := []string{"DATABASE_URL=" + d.databaseURL(), fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", d.temporalPort)}
	w := start(t, env, "worker")
	cc := newCCStandIn(t, d)
	cc.setUnavailable(true)
	const n = 5
	for i := range n {
		d.api.mustPost("/v1/tasks/desire", obj{"task": obj{"task_guid": fmt.Sprintf("t-%d", i), "domain": "cf-tasks",
			"rootfs": "preloaded:cflinuxfs4", "memory_mb": 16, "disk_mb": 16,
			"action":                  obj{"run": obj{"path": "/bin/true"}},
			"completion_callback_url": fmt.Sprintf("%s/internal/v4/tasks/t-%d/completed", cc.URL, i)}}, nil)
	}
	d.waitFor(t, "every task resolving (its callback refused)", 30*time.Second, func() bool {
		var resp struct {
			Tasks []struct {
				State string `json:"state"`
			} `json:"tasks"`
		}
		d.api.mustPost("/v1/tasks/list", obj{}, &resp)
		resolving := 0
		for _, task := range resp.Tasks {
			if task.State == "RESOLVING" {
				resolving++
			}
		}
		return resolving == n
	})
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-w.done
	cc.setUnavailable(false)
	time.Sleep(time.Second)
	start(t, env, "worker")
	d.waitFor(t, "every callback after the restart", 60*time.Second, func() bool {
		for i := range n {
			if len(cc.got(fmt.Sprintf("t-%d", i))) == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second) // a duplicate would arrive now
	for i := range n {
		if got := cc.got(fmt.Sprintf("t-%d", i)); len(got) != 1 {
			t.Fatalf("t-%d delivered %d times", i, len(got))
		}
	}
}

// TestCallbacksInFlightSurviveTheWorkerKilled kills the worker (SIGKILL) while its callbacks
// are posted and not answered yet, and starts another: once the killed worker's claims have
// expired, every callback is delivered again and answered exactly once.
func TestCallbacksInFlightSurviveTheWorkerKilled(t *testing.T) {
	d := startDev(t, "--no-worker")
	env := []string{"DATABASE_URL=" + d.databaseURL(), fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", d.temporalPort),
		"BBS_TASK_CALLBACK_LEASE=2s"}
	w := start(t, env, "worker")
	cc := newCCStandIn(t, d)
	release := cc.holdRequests()
	const n = 5
	for i := range n {
		d.api.mustPost("/v1/tasks/desire", obj{"task": obj{"task_guid": fmt.Sprintf("t-%d", i), "domain": "cf-tasks",
			"rootfs": "preloaded:cflinuxfs4", "memory_mb": 16, "disk_mb": 16,
			"action":                  obj{"run": obj{"path": "/bin/true"}},
			"completion_callback_url": fmt.Sprintf("%s/internal/v4/tasks/t-%d/completed", cc.URL, i)}}, nil)
	}
	d.waitFor(t, "every callback posted, none answered", 30*time.Second, func() bool { return cc.heldCount() == n })
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-w.done
	release()
	start(t, env, "worker")
	d.waitFor(t, "every callback after the restart", 60*time.Second, func() bool {
		for i := range n {
			if len(cc.got(fmt.Sprintf("t-%d", i))) == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second) // a duplicate would arrive now
	for i := range n {
		if got := cc.got(fmt.Sprintf("t-%d", i)); len(got) != 1 {
			t.Fatalf("t-%d answered %d times", i, len(got))
		}
	}
	var resp struct {
		Tasks []any `json:"tasks"`
	}
	d.api.mustPost("/v1/tasks/list", obj{}, &resp)
	if len(resp.Tasks) != 0 {
		t.Fatalf("tasks left after their callbacks: %v", resp.Tasks)
	}
}
