package db_test

import (
	"slices"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// completedTask desires, starts and completes a task (with newTask's callback unless
// callback is false).
func completedTask(t *testing.T, s *db.Store, guid string, callback bool) {
	t.Helper()
	task := newTask(guid)
	if !callback {
		task.CompletionCallbackURL = ""
	}
	desireTask(t, s, task)
	if _, _, err := s.StartTask(ctx, guid, "cell"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompleteTask(ctx, guid, "cell", false, "", "ok"); err != nil {
		t.Fatal(err)
	}
}

func claimedGUIDs(t *testing.T, s *db.Store, owner string) []string {
	t.Helper()
	claims, err := s.ClaimCallbacks(ctx, owner, 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range claims {
		if c.Task.State != model.TaskResolving {
			t.Fatalf("claimed %s is %s", c.Task.TaskGUID, c.Task.State)
		}
		out = append(out, c.Task.TaskGUID)
	}
	slices.Sort(out)
	return out
}

// A pool claims the completed tasks with a callback, oldest first, for itself alone; deletes
// only those it holds; a failed attempt waits for its back-off; an expired claim is anyone's.
func TestClaimCallbacks(t *testing.T) {
	s := dbtest.NewStore(t)
	completedTask(t, s, "a", true)
	completedTask(t, s, "b", true)
	completedTask(t, s, "plain", false)
	desireTask(t, s, newTask("pending"))

	if got := claimedGUIDs(t, s, "pool-1"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("pool-1 claimed %v", got)
	}
	if got := claimedGUIDs(t, s, "pool-2"); got != nil {
		t.Fatalf("pool-2 claimed %v while pool-1 holds them", got)
	}
	names := eventNames(t, s)
	if got := names[len(names)-2:]; !slices.Equal(got, []string{model.EventTaskChanged, model.EventTaskChanged}) {
		t.Fatalf("events after the claim: %v", names)
	}

	if n, err := s.ResolveCallbacks(ctx, "pool-2", []string{"a"}); err != nil || n != 0 {
		t.Fatalf("pool-2 resolved %d of pool-1's: %v", n, err)
	}
	if n, err := s.ResolveCallbacks(ctx, "pool-1", []string{"a"}); err != nil || n != 1 {
		t.Fatalf("pool-1 resolved %d: %v", n, err)
	}
	_, err := s.TaskByGUID(ctx, "a")
	wantType(t, err, model.ErrResourceNotFound)
	if names := eventNames(t, s); names[len(names)-1] != model.EventTaskRemoved {
		t.Fatalf("events after the delete: %v", names)
	}

	if ok, err := s.ReleaseCallback(ctx, "pool-2", "b", db.CallbackRelease{LastError: "x"}); err != nil || ok {
		t.Fatalf("pool-2 released pool-1's claim: %v, %v", ok, err)
	}
	if ok, err := s.ReleaseCallback(ctx, "pool-1", "b", db.CallbackRelease{LastError: "connection refused", RetryIn: time.Hour}); err != nil || !ok {
		t.Fatalf("release: %v, %v", ok, err)
	}
	if got := claimedGUIDs(t, s, "pool-2"); got != nil {
		t.Fatalf("claimed %v during the back-off", got)
	}
	exec(t, s, `UPDATE tasks SET callback_next_at = now() - interval '1 second' WHERE task_guid = 'b'`)
	claims, err := s.ClaimCallbacks(ctx, "pool-2", 10, time.Minute)
	if err != nil || len(claims) != 1 || claims[0].Task.TaskGUID != "b" || claims[0].Attempts != 1 {
		t.Fatalf("claim after the back-off = %+v, %v", claims, err)
	}

	// pool-2 dies: once its lease has run out pool-1 takes the task, and pool-2's late delete
	// leaves it alone.
	exec(t, s, `UPDATE tasks SET callback_claimed_until = now() - interval '1 second' WHERE task_guid = 'b'`)
	if got := claimedGUIDs(t, s, "pool-1"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("pool-1 claimed %v after pool-2's lease", got)
	}
	if n, err := s.ResolveCallbacks(ctx, "pool-2", []string{"b"}); err != nil || n != 0 {
		t.Fatalf("pool-2 resolved %d after losing its claim: %v", n, err)
	}

	// A pool that stops lets the others claim at once.
	if err := s.ReleaseCallbackClaims(ctx, "pool-1"); err != nil {
		t.Fatal(err)
	}
	if got := claimedGUIDs(t, s, "pool-2"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("pool-2 claimed %v after pool-1 stopped", got)
	}
}

// Renewing keeps a claim alive past its first lease.
func TestRenewCallbackClaims(t *testing.T) {
	s := dbtest.NewStore(t)
	completedTask(t, s, "a", true)
	if _, err := s.ClaimCallbacks(ctx, "pool-1", 10, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := s.RenewCallbackClaims(ctx, "pool-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	var live bool
	if err := s.DB().QueryRow(`SELECT callback_claimed_until > now() + interval '30 minutes' FROM tasks WHERE task_guid = 'a'`).Scan(&live); err != nil || !live {
		t.Fatalf("renewed lease: %v, %v", live, err)
	}
	if got := claimedGUIDs(t, s, "pool-2"); got != nil {
		t.Fatalf("pool-2 claimed %v under a renewed lease", got)
	}
}

// A handed-over callback is the workflow's alone; a workflow finds nothing to deliver for a
// task a pool holds, and takes one nobody holds.
func TestCallbackForWorkflow(t *testing.T) {
	s := dbtest.NewStore(t)
	completedTask(t, s, "held", true)
	completedTask(t, s, "free", true)
	completedTask(t, s, "plain", false)
	desireTask(t, s, newTask("pending"))
	if _, err := s.ClaimCallbacks(ctx, "pool-1", 1, time.Minute); err != nil { // "held", the older
		t.Fatal(err)
	}

	if got, err := s.CallbackForWorkflow(ctx, "held"); err != nil || got != nil {
		t.Fatalf("workflow took a task a pool holds: %+v, %v", got, err)
	}
	got, err := s.CallbackForWorkflow(ctx, "free")
	if err != nil || got == nil || got.State != model.TaskResolving || got.CompletionCallbackURL == "" {
		t.Fatalf("free = %+v, %v", got, err)
	}
	if got := claimedGUIDs(t, s, "pool-2"); got != nil {
		t.Fatalf("a pool claimed %v, handed over to the workflow", got)
	}
	if again, err := s.CallbackForWorkflow(ctx, "free"); err != nil || again == nil {
		t.Fatalf("the workflow again = %+v, %v", again, err)
	}

	if ok, err := s.ReleaseCallback(ctx, "pool-1", "held", db.CallbackRelease{LastError: "503", HandOver: true}); err != nil || !ok {
		t.Fatalf("hand over: %v, %v", ok, err)
	}
	if got, err := s.CallbackForWorkflow(ctx, "held"); err != nil || got == nil {
		t.Fatalf("handed over = %+v, %v", got, err)
	}
	if n, err := s.ResolveCallbacks(ctx, "pool-1", []string{"held"}); err != nil || n != 0 {
		t.Fatalf("a pool deleted %d handed-over tasks: %v", n, err)
	}

	for _, g := range []string{"plain", "gone"} {
		if got, err := s.CallbackForWorkflow(ctx, g); err != nil || got != nil {
			t.Fatalf("%s = %+v, %v", g, got, err)
		}
	}
	_, err = s.CallbackForWorkflow(ctx, "pending")
	wantType(t, err, model.ErrInvalidStateTransition)
}

// A task with a callback that completes notifies the pools; a task without one does not.
func TestCallbackNotification(t *testing.T) {
	s := dbtest.NewStore(t)
	n := s.Notifications()
	if err := n.Listen(ctx, db.CallbacksChannel); err != nil {
		t.Fatal(err)
	}
	sub := n.Subscribe(ctx, db.CallbacksChannel)
	defer sub.Close()
	completedTask(t, s, "a", true)
	select {
	case <-sub.C:
	case <-time.After(30 * time.Second):
		t.Fatal("no notification for a completed task with a callback")
	}
}

// A task the release before the pools completed (its completion leaves callback_next_at
// unset) has a workflow of that release delivering it, whose activities know nothing of the
// pools' claims, maybe on a worker of that release during a rolling upgrade: no pool claims
// it, resolving or not, and convergence starts its workflow once it has waited the kick
// duration. A task this build completes is the pools'.
func TestCallbacksOfTheReleaseBeforeThePools(t *testing.T) {
	s := dbtest.NewStore(t)
	completedTask(t, s, "old", true)
	completedTask(t, s, "old-resolving", true)
	completedTask(t, s, "new", true)
	// As that release's completion, and its workflow's resolve, leave them.
	exec(t, s, `UPDATE tasks SET callback_next_at = NULL WHERE task_guid IN ('old', 'old-resolving')`)
	exec(t, s, `UPDATE tasks SET state = 'RESOLVING' WHERE task_guid = 'old-resolving'`)
	if got := claimedGUIDs(t, s, "pool-1"); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("the pool claimed %v, want only the task this build completed", got)
	}
	// A task convergence fails (its cell gone) is completed by this build too.
	desireTask(t, s, newTask("lost"))
	if _, _, err := s.StartTask(ctx, "lost", "vanished-cell"); err != nil {
		t.Fatal(err)
	}
	res, err := s.ConvergeTasks(ctx, db.TaskConvergeOptions{KickDuration: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	var kicked []string
	for _, task := range res.ToDeliver {
		kicked = append(kicked, task.TaskGUID)
	}
	slices.Sort(kicked)
	if !slices.Equal(kicked, []string{"old", "old-resolving"}) {
		t.Fatalf("convergence starts the workflows of %v, want the two the release before completed", kicked)
	}
	// The workflow takes it; the pools never will, but take the one convergence failed.
	if task, err := s.CallbackForWorkflow(ctx, "old"); err != nil || task == nil || task.State != model.TaskResolving {
		t.Fatalf("the workflow's claim of old: %+v, %v", task, err)
	}
	if got := claimedGUIDs(t, s, "pool-2"); !slices.Equal(got, []string{"lost"}) {
		t.Fatalf("pool-2 claimed %v, want the task convergence failed", got)
	}
}
