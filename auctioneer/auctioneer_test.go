package auctioneer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/testwait"

	"github.com/updatable-lrps/bbs/auctioneer"
	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// recordingCells takes every piece of work and reports which LRPs and tasks it was handed
// (a task as "task:<guid>"); with rejectTasks it refuses every task.
type recordingCells struct {
	got         chan string
	rejectTasks bool
}

func (c *recordingCells) Perform(_ context.Context, _ string, work cellapi.PerformRequest) (*cellapi.PerformResponse, error) {
	resp := &cellapi.PerformResponse{}
	for _, w := range work.LRPs {
		c.got <- w.Key.ProcessGUID
	}
	for _, t := range work.Tasks {
		if t.Definition.Action == nil || t.Domain == "" {
			return nil, fmt.Errorf("task %s handed out without its definition", t.TaskGUID)
		}
		c.got <- "task:" + t.TaskGUID
		if c.rejectTasks {
			resp.RejectedTasks = append(resp.RejectedTasks, cellapi.TaskRejection{TaskGUID: t.TaskGUID, Reason: "cell is full"})
		}
	}
	return resp, nil
}

// wait returns once every one of guids was handed out, in any order.
func (c *recordingCells) wait(t *testing.T, guids ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, g := range guids {
		want[g] = true
	}
	deadline := time.After(10 * time.Second)
	for len(want) > 0 {
		select {
		case g := <-c.got:
			delete(want, g)
		case <-deadline:
			t.Fatalf("never placed: %v", want)
		}
	}
}

func desire(t *testing.T, s *db.Store, guid string) {
	t.Helper()
	_, err := s.DesireLRP(context.Background(), &model.DesiredLRP{
		ProcessGUID: guid, Domain: "cf-apps", Instances: 1,
		LRPDefinition: model.LRPDefinition{
			RootFS: "docker:///busybox", MemoryMB: 64, DiskMB: 64,
			Action: &model.Action{Run: &model.RunAction{Path: "/bin/true"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func waitLog(t *testing.T, logs *observer.ObservedLogs, level zapcore.Level, text string) {
	t.Helper()
	testwait.Until(t, 10*time.Second, 10*time.Millisecond, fmt.Sprintf("a %s log containing %q", level, text), func() bool {
		for _, e := range logs.All() {
			if e.Level == level && strings.Contains(e.Message, text) {
				return true
			}
		}
		return false
	})
}

// Placement runs when the store notifies, not only on its interval (an hour here), and after
// the notification connection is lost it says so (the notifier, at warn) and places what
// waits once it is back, whatever was notified meanwhile.
func TestPlacementWakesOnNotifications(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	s, err := db.Open(ctx, dbtest.NewURL(t), db.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.DB().Exec(`INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, expires_at)
VALUES ('cell-1', 'z1', 'http://127.0.0.1:1', 4096, 4096, 100, now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	cells := &recordingCells{got: make(chan string, 100)}
	a := auctioneer.New(s, s.Notifications(), cells, auctioneer.Options{Interval: time.Hour}, log)
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitLog(t, logs, zap.InfoLevel, "leading placement")
	if err := s.Notifications().Listen(ctx, db.PlacementChannel); err != nil {
		t.Fatal(err)
	}

	desire(t, s, "first")
	cells.wait(t, "first")
	// Only a notification can start the round that places this one.
	desire(t, s, "second")
	cells.wait(t, "second")

	if _, err := s.DB().Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE datname = current_database() AND application_name = $1`, db.ListenerApplicationName); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, zap.WarnLevel, "lost its connection")
	waitLog(t, logs, zap.InfoLevel, "notifications resynced")
	desire(t, s, "third")
	cells.wait(t, "third")
}

func desireTask(t *testing.T, s *db.Store, guid string, memoryMB int32) {
	t.Helper()
	_, err := s.DesireTask(context.Background(), &model.Task{TaskGUID: guid, Domain: "cf-tasks",
		TaskDefinition: model.TaskDefinition{RootFS: "docker:///busybox", MemoryMB: memoryMB, DiskMB: 64,
			Action: &model.Action{Run: &model.RunAction{Path: "/bin/true"}}}})
	if err != nil {
		t.Fatal(err)
	}
}

// Tasks are placed with instances; a task that fits no cell, or that its cell refuses, is
// rejected with the reason and tried again, and fails once rejected MaxTaskRetries times.
func TestTaskPlacementAndRejection(t *testing.T) {
	ctx := context.Background()
	s, cells := runTaskPlacement(t, false, 2)

	desireTask(t, s, "fits", 512)
	desire(t, s, "lrp")
	cells.wait(t, "task:fits", "lrp")

	desireTask(t, s, "too-big", 2048)
	testwait.Until(t, 10*time.Second, 10*time.Millisecond, "the oversized task to fail after its rejections", func() bool {
		task, err := s.TaskByGUID(ctx, "too-big")
		return err == nil && task.State == model.TaskCompleted
	})
	task, _ := s.TaskByGUID(ctx, "too-big")
	if !task.Failed || task.FailureReason != model.PlacementErrorInsufficientResources || task.RejectionCount != 2 {
		t.Fatalf("too-big = %+v", task)
	}
}

// A cell's refusal counts as a rejection.
func TestTaskRejectedByCell(t *testing.T) {
	ctx := context.Background()
	s, _ := runTaskPlacement(t, true, 1)

	desireTask(t, s, "refused", 64)
	testwait.Until(t, 10*time.Second, 10*time.Millisecond, "the refused task to fail", func() bool {
		task, err := s.TaskByGUID(ctx, "refused")
		return err == nil && task.State == model.TaskCompleted
	})
	task, _ := s.TaskByGUID(ctx, "refused")
	if !task.Failed || task.FailureReason != "cell is full" || task.RejectionCount != 1 {
		t.Fatalf("refused = %+v", task)
	}
}

// runTaskPlacement runs an auctioneer, quick to retry, over a fresh store with one 1 GiB cell
// whose agent records its work (refusing every task with rejectTasks), until the test ends.
func runTaskPlacement(t *testing.T, rejectTasks bool, maxRetries int) (*db.Store, *recordingCells) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := dbtest.NewStore(t)
	if _, err := s.DB().Exec(`INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, expires_at)
VALUES ('cell-1', 'z1', 'http://127.0.0.1:1', 1024, 4096, 100, now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	cells := &recordingCells{got: make(chan string, 100), rejectTasks: rejectTasks}
	a := auctioneer.New(s, s.Notifications(), cells, auctioneer.Options{Interval: 20 * time.Millisecond,
		RetryFailed: 20 * time.Millisecond, MaxTaskRetries: maxRetries}, zap.NewNop())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, cells
}

// A task handed to a cell that does not start it is handed out again once Resend has passed
// (BBS's kick of a PENDING task), and not before.
func TestUnstartedTaskIsOfferedAgain(t *testing.T) {
	s := dbtest.NewStore(t)
	if _, err := s.DB().Exec(`INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, expires_at)
VALUES ('cell-1', 'z1', 'http://127.0.0.1:1', 1024, 4096, 100, now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	cells := &recordingCells{got: make(chan string, 100)}
	a := auctioneer.New(s, s.Notifications(), cells, auctioneer.Options{Resend: time.Hour}, zap.NewNop())
	desireTask(t, s, "idle", 64)
	ctx := context.Background()
	if err := a.Round(ctx); err != nil {
		t.Fatal(err)
	}
	cells.wait(t, "task:idle")
	if err := a.Round(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-cells.got:
		t.Fatalf("%s handed out again before Resend", g)
	default:
	}
	quick := auctioneer.New(s, s.Notifications(), cells, auctioneer.Options{Resend: time.Millisecond}, zap.NewNop())
	if err := quick.Round(ctx); err != nil {
		t.Fatal(err)
	}
	cells.wait(t, "task:idle")
	time.Sleep(5 * time.Millisecond)
	if err := quick.Round(ctx); err != nil {
		t.Fatal(err)
	}
	cells.wait(t, "task:idle")
}
