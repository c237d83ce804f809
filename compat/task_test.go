package compat

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"code.cloudfoundry.org/bbs/events"
	"code.cloudfoundry.org/bbs/format"
	"code.cloudfoundry.org/bbs/models"
	"github.com/gogo/protobuf/proto"
)

// The dev system's cells run the tasks placement hands them. The tests that play the rep
// themselves desire their tasks with the placement tag of taskCell, a cell of their own
// (standInRep) that takes the work and does nothing with it: placement hands those tasks
// there and nowhere else, and the test starts and completes them as a rep would.
const taskCell = "compat-rep"

var standInOnce sync.Once

// standInRep announces taskCell (through the JSON API's heartbeat, for an hour) with an
// HTTP server that accepts every piece of work and starts none of it.
func standInRep(t *testing.T) {
	t.Helper()
	standInOnce.Do(func() {
		rep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"rejected":[]}`)
		}))
		body, _ := json.Marshal(map[string]any{"ttl": 3600, "cell_presence": map[string]any{
			"cell_id": taskCell, "zone": "z1", "rep_address": rep.URL, "placement_tags": []string{taskCell},
			"capacity": map[string]any{"memory_mb": 1 << 20, "disk_mb": 1 << 20, "containers": 1000}}})
		resp, err := http.Post(sys.apiURL+"/v1/cells/heartbeat", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("announce the stand-in rep: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("announce the stand-in rep: status %d", resp.StatusCode)
		}
	})
}

// ccStagingTask is a staging task's definition as Cloud Controller desires it (domain
// cf-app-staging; BBS-PROTOCOL.md §4.2 point 8), every field a TaskDefinition has, in the
// real client's models; its callback goes to callbackURL.
func ccStagingTask(t *testing.T, callbackURL string) *models.TaskDefinition {
	t.Helper()
	download := func(artifact, from, to string) *models.DownloadAction {
		return &models.DownloadAction{Artifact: artifact, From: from, To: to, CacheKey: artifact, User: "vcap"}
	}
	upload := func(artifact, from, to string) *models.UploadAction {
		return &models.UploadAction{Artifact: artifact, From: from, To: to, User: "vcap"}
	}
	builder := &models.RunAction{Path: "/tmp/lifecycle/builder", Args: []string{"-buildpackOrder=ruby"}, User: "vcap",
		ResourceLimits: &models.ResourceLimits{}}
	builder.ResourceLimits.SetNofile(16384)
	def := &models.TaskDefinition{
		RootFs:               "preloaded:cflinuxfs4",
		EnvironmentVariables: []*models.EnvironmentVariable{{Name: "VCAP_APPLICATION", Value: `{"name":"app"}`}, {Name: "CF_STACK", Value: "cflinuxfs4"}},
		Action: models.WrapAction(models.Timeout(models.Serial(
			download("app package", "https://cc/packages/x", "/tmp/app"),
			models.EmitProgressFor(builder, "Staging...", "Staging complete", "Staging failed"),
			models.Parallel(upload("droplet", "/tmp/droplet", "https://cc/droplets/x"), upload("cache", "/tmp/cache", "https://cc/cache/x")),
		), 15*time.Minute)),
		DiskMb:                        4096,
		MemoryMb:                      1024,
		CpuWeight:                     50,
		LogSource:                     "STG",
		LogGuid:                       "app-guid",
		MetricsGuid:                   "app-guid",
		PlacementTags:                 []string{taskCell},
		ResultFile:                    "/tmp/result.json",
		CompletionCallbackUrl:         callbackURL,
		Annotation:                    `{"lifecycle":"buildpack"}`,
		EgressRules:                   []*models.SecurityGroupRule{{Protocol: "tcp", Destinations: []string{"0.0.0.0-9.255.255.255"}, Ports: []uint32{443}}},
		CachedDependencies:            []*models.CachedDependency{{Name: "ruby_buildpack", From: "https://cc/buildpacks/ruby", To: "/tmp/buildpacks/ruby", CacheKey: "ruby"}},
		LegacyDownloadUser:            "vcap",
		TrustedSystemCertificatesPath: "/etc/cf-system-certificates",
		VolumeMounts: []*models.VolumeMount{{Driver: "nfsv3driver", ContainerDir: "/data", Mode: "r",
			Shared: &models.SharedDevice{VolumeId: "vol", MountConfig: `{"source":"nfs://s/e"}`}}},
		Network:               &models.Network{Properties: map[string]string{"app_id": "app-guid"}},
		MaxPids:               1024,
		CertificateProperties: &models.CertificateProperties{OrganizationalUnit: []string{"organization:o", "space:s", "app:a"}},
		ImageUsername:         "user",
		ImagePassword:         "password",
		ImageLayers: []*models.ImageLayer{
			{Name: "lifecycle", Url: "https://cc/lifecycle.tgz", DestinationPath: "/tmp/lifecycle", LayerType: models.LayerTypeShared,
				MediaType: models.MediaTypeTgz, DigestAlgorithm: models.DigestAlgorithmSha256, DigestValue: "11"},
			{Name: "app package", Url: "https://cc/packages/x.zip", DestinationPath: "/tmp/app", LayerType: models.LayerTypeExclusive,
				MediaType: models.MediaTypeZip, DigestAlgorithm: models.DigestAlgorithmSha256, DigestValue: "22"},
		},
		LogRateLimit:       &models.LogRateLimit{BytesPerSecond: 16384},
		MetricTags:         map[string]*models.MetricTagValue{"source_id": {Static: "app-guid"}, "app_name": {Static: "a & b"}},
		VolumeMountedFiles: []*models.File{{Path: "/etc/binding", Content: "secret"}},
	}
	if err := def.Validate(); err != nil {
		t.Fatalf("ccStagingTask does not pass BBS's validation: %v", err)
	}
	return def
}

// taskEvents follows the task stream for the events of one task.
type taskEvents struct {
	t   *testing.T
	src events.EventSource
}

// next is the stream's next event of guid, as "<name> <state>" (before>after for a change),
// with the task it carries (after, for a change).
func (te taskEvents) next(guid string) (string, *models.Task) {
	te.t.Helper()
	for {
		switch e := next(te.t, te.src).(type) {
		case *models.TaskCreatedEvent:
			if e.Task.TaskGuid == guid {
				return e.EventType() + " " + e.Task.State.String(), e.Task
			}
		case *models.TaskChangedEvent:
			if e.After.TaskGuid == guid {
				return e.EventType() + " " + e.Before.State.String() + ">" + e.After.State.String(), e.After
			}
		case *models.TaskRemovedEvent:
			if e.Task.TaskGuid == guid {
				return e.EventType() + " " + e.Task.State.String(), e.Task
			}
		}
	}
}

// expect reads guid's next events and compares them with want.
func (te taskEvents) expect(guid string, want ...string) *models.Task {
	te.t.Helper()
	var last *models.Task
	for _, w := range want {
		var got string
		got, last = te.next(guid)
		if got != w {
			te.t.Fatalf("task %s: event %q, want %q", guid, got, w)
		}
	}
	return last
}

// isError says whether err is a BBS error of type typ.
func isError(err error, typ models.Error_Type) bool {
	var merr *models.Error
	return errors.As(err, &merr) && merr.Type == typ
}

// A staging task through the real client as Cloud Controller and a rep drive it: desired
// with every field, read back equal from the .r3 routes, and from the deprecated .r2 ones
// exactly as BBS's own models downgrade it; listed by domain and cell; started and
// completed on a cell, after which its completion callback is POSTed to Cloud Controller
// and the task resolved and deleted; every change on the task stream.
func TestStagingTaskThroughTheRealClient(t *testing.T) {
	standInRep(t)
	c, log := newClient(t), testLogger(t)
	src, err := c.SubscribeToTaskEvents(log)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	stream := taskEvents{t, src}
	time.Sleep(500 * time.Millisecond) // the stream subscribes once its request arrives

	// Cloud Controller's callback endpoint: it records the callback and answers once the
	// test lets it.
	callbacks, release := make(chan []byte, 1), make(chan struct{})
	cc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case callbacks <- b:
		default:
		}
		<-release
	}))
	defer cc.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	const guid = "compat-staging-7a1b2c3d"
	def := ccStagingTask(t, cc.URL+"/internal/v3/staging/"+guid+"/build_completed?start=true")
	if err := c.DesireTask(log, traceID(t), guid, "cf-app-staging", def); err != nil {
		t.Fatalf("DesireTask: %v", err)
	}
	if err := c.DesireTask(log, traceID(t), guid, "cf-app-staging", def); !isError(err, models.Error_ResourceExists) ||
		err.(*models.Error).Message != "the requested resource already exists" {
		t.Errorf("desiring it twice = %v, want ResourceExists with BBS's message", err)
	}
	task, err := c.TaskByGuid(log, traceID(t), guid)
	if err != nil {
		t.Fatalf("TaskByGuid: %v", err)
	}
	if !task.TaskDefinition.Equal(def) {
		t.Fatalf("the definition read back differs:\n got %s\nwant %s", task.TaskDefinition, def)
	}
	if task.TaskGuid != guid || task.Domain != "cf-app-staging" || task.State != models.Task_Pending || task.CreatedAt == 0 || task.CellId != "" {
		t.Fatalf("task = %s", task)
	}
	if _, created := stream.next(guid); !created.Equal(task) {
		t.Fatalf("task_created carries %s, want %s", created, task)
	}

	// The deprecated .r2 reads, as Cloud Controller uses them: V2, as BBS's models make it.
	v2 := task.VersionDownTo(format.V2)
	var r2 models.TaskResponse
	if _, _, err := postProto(http.DefaultClient, sys.protocolURL+"/v1/tasks/get_by_task_guid.r2",
		mustMarshal(t, &models.TaskByGuidRequest{TaskGuid: guid}), &r2); err != nil || r2.Error != nil || !r2.Task.Equal(v2) {
		t.Fatalf("get_by_task_guid.r2 = %s, %v, %v; want %s", r2.Task, r2.Error, err, v2)
	}
	var list2 models.TasksResponse
	if _, _, err := postProto(http.DefaultClient, sys.protocolURL+"/v1/tasks/list.r2",
		mustMarshal(t, &models.TasksRequest{Domain: "cf-app-staging"}), &list2); err != nil || len(list2.Tasks) != 1 || !list2.Tasks[0].Equal(v2) {
		t.Fatalf("list.r2 of cf-app-staging = %v, %v, %v", list2.Tasks, list2.Error, err)
	}
	if l, err := c.TasksByDomain(log, traceID(t), "cf-app-staging"); err != nil || len(l) != 1 || !l[0].Equal(task) {
		t.Fatalf("TasksByDomain = %v, %v", l, err)
	}
	if l, err := c.Tasks(log, traceID(t)); err != nil || !containsTask(l, guid) {
		t.Fatalf("Tasks = %v, %v", l, err)
	}

	// The rep: start (twice: the second says not to), then complete with the result.
	if start, err := c.StartTask(log, traceID(t), guid, taskCell); err != nil || !start {
		t.Fatalf("StartTask = %v, %v; want true", start, err)
	}
	if start, err := c.StartTask(log, traceID(t), guid, taskCell); err != nil || start {
		t.Errorf("StartTask again = %v, %v; want false", start, err)
	}
	if l, err := c.TasksByCellID(log, traceID(t), taskCell); err != nil || !containsTask(l, guid) {
		t.Fatalf("TasksByCellID(%s) = %v, %v", taskCell, l, err)
	}
	if _, running := stream.next(guid); running.State != models.Task_Running || running.CellId != taskCell {
		t.Fatalf("after StartTask the stream has %s", running)
	}
	const result = `{"lifecycle_type":"buildpack","process_types":{"web":"rackup"}}`
	if err := c.CompleteTask(log, traceID(t), guid, taskCell, false, "", result); err != nil {
		t.Fatalf("CompleteTask: %v", err)
	}
	if err := c.CompleteTask(log, traceID(t), guid, taskCell, false, "", result); !isError(err, models.Error_InvalidStateTransition) {
		t.Errorf("completing it twice = %v, want InvalidStateTransition", err)
	}

	// The BBS resolves it and POSTs the callback, then deletes it once Cloud Controller
	// answered.
	var body []byte
	select {
	case body = <-callbacks:
	case <-time.After(time.Minute):
		t.Fatal("no completion callback within a minute")
	}
	var cb models.TaskCallbackResponse
	if err := json.Unmarshal(body, &cb); err != nil || cb.TaskGuid != guid || cb.Failed || cb.Result != result ||
		cb.Annotation != def.Annotation || cb.CreatedAt != task.CreatedAt {
		t.Errorf("the callback = %s (%v)", body, err)
	}
	close(release)
	stream.expect(guid, "task_changed Running>Completed", "task_changed Completed>Resolving", "task_removed Resolving")
	if _, err := c.TaskByGuid(log, traceID(t), guid); !isError(err, models.Error_ResourceNotFound) {
		t.Errorf("TaskByGuid after the callback = %v, want ResourceNotFound", err)
	}
}

// A task without a callback, as `cf run-task` and cfdot drive them: rejected by a cell,
// started and failed by another, resolved and deleted by hand; another cancelled (a
// resolved task cannot be), and one failed through the deprecated route.
func TestTaskLifecycleThroughTheRealClient(t *testing.T) {
	standInRep(t)
	c, log := newClient(t), testLogger(t)
	src, err := c.SubscribeToTaskEvents(log)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	stream := taskEvents{t, src}
	time.Sleep(500 * time.Millisecond)

	def := func() *models.TaskDefinition {
		return &models.TaskDefinition{RootFs: "docker:///busybox", MemoryMb: 16, DiskMb: 16, LogGuid: "app-guid",
			PlacementTags: []string{taskCell},
			Action:        models.WrapAction(&models.RunAction{Path: "/bin/sh", Args: []string{"-c", "exit 1"}, User: "root"})}
	}
	const domain = "compat-tasks"
	for _, guid := range []string{"compat-run", "compat-cancel", "compat-fail"} {
		if err := c.DesireTask(log, traceID(t), guid, domain, def()); err != nil {
			t.Fatalf("DesireTask %s: %v", guid, err)
		}
		stream.expect(guid, "task_created Pending")
	}

	if err := c.RejectTask(log, traceID(t), "compat-run", "insufficient resources"); err != nil {
		t.Fatalf("RejectTask: %v", err)
	}
	if rejected := stream.expect("compat-run", "task_changed Pending>Pending"); rejected.RejectionCount != 1 || rejected.RejectionReason != "insufficient resources" {
		t.Errorf("rejected task = %s", rejected)
	}
	if start, err := c.StartTask(log, traceID(t), "compat-run", taskCell); err != nil || !start {
		t.Fatalf("StartTask = %v, %v", start, err)
	}
	if err := c.CompleteTask(log, traceID(t), "compat-run", taskCell, true, "Exited with status 1", ""); err != nil {
		t.Fatalf("CompleteTask: %v", err)
	}
	if err := c.ResolvingTask(log, traceID(t), "compat-run"); err != nil {
		t.Fatalf("ResolvingTask: %v", err)
	}
	if err := c.DeleteTask(log, traceID(t), "compat-run"); err != nil {
		t.Fatalf("DeleteTask: %v", err)
	}
	stream.expect("compat-run", "task_changed Pending>Running", "task_changed Running>Completed",
		"task_changed Completed>Resolving", "task_removed Resolving")

	if err := c.CancelTask(log, traceID(t), "compat-cancel"); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	cancelled, err := c.TaskByGuid(log, traceID(t), "compat-cancel")
	if err != nil || cancelled.State != models.Task_Completed || !cancelled.Failed || cancelled.FailureReason != "task was cancelled" {
		t.Fatalf("cancelled task = %s, %v", cancelled, err)
	}
	if err := c.ResolvingTask(log, traceID(t), "compat-cancel"); err != nil {
		t.Fatalf("ResolvingTask: %v", err)
	}
	err = c.CancelTask(log, traceID(t), "compat-cancel")
	if merr := (*models.Error)(nil); !errors.As(err, &merr) || merr.Type != models.Error_InvalidStateTransition ||
		merr.Message != "Cannot transition from Resolving to Completed" {
		t.Errorf("cancelling a resolving task = %v, want InvalidStateTransition %q", err, "Cannot transition from Resolving to Completed")
	}
	if err := c.DeleteTask(log, traceID(t), "compat-cancel"); err != nil {
		t.Fatalf("DeleteTask: %v", err)
	}
	stream.expect("compat-cancel", "task_changed Pending>Completed", "task_changed Completed>Resolving", "task_removed Resolving")

	if err := c.FailTask(log, traceID(t), "compat-fail", "gave up"); err != nil {
		t.Fatalf("FailTask: %v", err)
	}
	if failed := stream.expect("compat-fail", "task_changed Pending>Completed"); !failed.Failed || failed.FailureReason != "gave up" {
		t.Errorf("failed task = %s", failed)
	}
	if l, err := c.TasksByDomain(log, traceID(t), domain); err != nil || len(l) != 1 || l[0].TaskGuid != "compat-fail" {
		t.Errorf("TasksByDomain(%s) = %v, %v; want compat-fail alone", domain, l, err)
	}
	for _, step := range []func(string) error{
		func(g string) error { return c.ResolvingTask(log, traceID(t), g) },
		func(g string) error { return c.DeleteTask(log, traceID(t), g) },
	} {
		if err := step("compat-fail"); err != nil {
			t.Fatal(err)
		}
	}
}

func containsTask(l []*models.Task, guid string) bool {
	for _, t := range l {
		if t.TaskGuid == guid {
			return true
		}
	}
	return false
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A task desired through the real client runs on the dev system's own cells: placed, started
// by a cell, its result file read when it exits 0, and completed with it; the client then
// resolves and deletes it.
func TestTaskRunsOnTheCells(t *testing.T) {
	c, log := newClient(t), testLogger(t)
	def := &models.TaskDefinition{RootFs: "preloaded:cflinuxfs4", MemoryMb: 16, DiskMb: 16, ResultFile: "/tmp/result.json",
		Action: models.WrapAction(&models.RunAction{Path: "/bin/sh", User: "vcap",
			Args: []string{"-c", `mkdir -p tmp && printf '{"ran":"%s"}' "$CF_INSTANCE_IP" > tmp/result.json`}})}
	if err := c.DesireTask(log, traceID(t), "compat-on-cells", "cf-tasks", def); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var task *models.Task
	for {
		var err error
		if task, err = c.TaskByGuid(log, traceID(t), "compat-on-cells"); err != nil {
			t.Fatal(err)
		}
		if task.State == models.Task_Completed || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if task.State != models.Task_Completed || task.Failed || task.Result != `{"ran":"127.0.0.1"}` {
		t.Fatalf("task after running on the cells: state %s failed %v (%q) result %q", task.State, task.Failed, task.FailureReason, task.Result)
	}
	if err := c.ResolvingTask(log, traceID(t), "compat-on-cells"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTask(log, traceID(t), "compat-on-cells"); err != nil {
		t.Fatal(err)
	}
}
