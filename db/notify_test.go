package db_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/testwait"

	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// testChannel is a channel of the tests' own, beside the store's two.
const testChannel = "bbs_test_channel"

// notifyStore opens a store whose log the test reads.
func notifyStore(t *testing.T) (*db.Store, *observer.ObservedLogs) {
	s, logs, _ := notifyStoreAt(t)
	return s, logs
}

// notifyStoreAt is notifyStore, with a function that makes the database refuse new
// connections (or accept them again) while those open stay: what keeps a cut listener down.
func notifyStoreAt(t *testing.T) (*db.Store, *observer.ObservedLogs, func(allow bool)) {
	t.Helper()
	raw := dbtest.NewURL(t)
	core, logs := observer.New(zap.DebugLevel)
	s, err := db.Open(ctx, raw, db.WithLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// PostgreSQL takes ALLOW_CONNECTIONS from a session on another database only.
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	admin, err := sql.Open("postgres", u.String())
	if err != nil {
		t.Fatal(err)
	}
	admin.SetMaxIdleConns(1)
	t.Cleanup(func() { admin.Close() })
	allow := func(yes bool) {
		t.Helper()
		if _, err := admin.ExecContext(ctx, fmt.Sprintf(`ALTER DATABASE %s ALLOW_CONNECTIONS %t`, pq.QuoteIdentifier(name), yes)); err != nil {
			t.Fatalf("allow connections %t: %v", yes, err)
		}
	}
	// Before the database is dropped, whatever the test did.
	t.Cleanup(func() {
		admin.ExecContext(ctx, fmt.Sprintf(`ALTER DATABASE %s ALLOW_CONNECTIONS true`, pq.QuoteIdentifier(name)))
	})
	return s, logs, allow
}

// notify sends a notification through q (the pool, or a connection of the test's own).
func notify(t *testing.T, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, channel, payload string) {
	t.Helper()
	if _, err := q.ExecContext(ctx, `SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		t.Fatalf("notify %s %q: %v", channel, payload, err)
	}
}

func listen(t *testing.T, n *db.Notifier, channels ...string) {
	t.Helper()
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, c := range channels {
		if err := n.Listen(wait, c); err != nil {
			t.Fatalf("listen on %s: %v", c, err)
		}
	}
}

// woken waits up to 10 s for a wake-up of s and returns whether it was a resync.
func woken(t *testing.T, name string, s *db.Subscription) bool {
	t.Helper()
	select {
	case <-s.C:
		return s.Resynced()
	case <-time.After(10 * time.Second):
		t.Fatalf("%s never woke", name)
		return false
	}
}

// asleep checks that s does not wake for a while.
func asleep(t *testing.T, name string, s *db.Subscription) {
	t.Helper()
	select {
	case <-s.C:
		t.Fatalf("%s woke for a notification that was not its own", name)
	case <-time.After(200 * time.Millisecond):
	}
}

// listeners counts the notification connections to the test's database.
func listeners(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) int {
	t.Helper()
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND application_name = $1`, db.ListenerApplicationName).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A notification wakes only the subscribers of its key, and every subscriber of its channel.
func TestNotifierFansOutByKey(t *testing.T) {
	s, _ := notifyStore(t)
	n := s.Notifications()
	if s.Notifications() != n {
		t.Fatal("a second call started a second notifier")
	}
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	a1 := n.SubscribeKey(subCtx, db.LRPChangesChannel, "a")
	a2 := n.SubscribeKey(subCtx, db.LRPChangesChannel, "a")
	b := n.SubscribeKey(subCtx, db.LRPChangesChannel, "b")
	all := n.Subscribe(subCtx, db.LRPChangesChannel)
	other := n.Subscribe(subCtx, testChannel)
	listen(t, n, db.LRPChangesChannel, testChannel)

	notify(t, s.DB(), db.LRPChangesChannel, "a")
	for name, sub := range map[string]*db.Subscription{"a1": a1, "a2": a2, "channel": all} {
		if woken(t, name, sub) {
			t.Fatalf("%s took a notification for a resync", name)
		}
	}
	asleep(t, "b", b)
	asleep(t, "the other channel", other)

	// An empty payload names no key: it concerns them all.
	notify(t, s.DB(), db.LRPChangesChannel, "")
	for name, sub := range map[string]*db.Subscription{"a1": a1, "a2": a2, "b": b, "channel": all} {
		woken(t, name, sub)
	}
	asleep(t, "the other channel", other)

	// Coalesced: however many notifications come, at most one wake-up is pending.
	for range 5 {
		notify(t, s.DB(), db.LRPChangesChannel, "b")
	}
	woken(t, "b", b)
	time.Sleep(200 * time.Millisecond)
	select {
	case <-b.C:
	default:
	}
	select {
	case <-b.C:
		t.Fatal("b had two wake-ups pending")
	default:
	}

	if got := listeners(t, s.DB()); got != 1 {
		t.Fatalf("%d notification connections for two channels, want 1", got)
	}
	if got := n.Subscribers(db.LRPChangesChannel); got != 4 {
		t.Fatalf("%d subscribers, want 4", got)
	}
	b.Close()
	b.Close()
	if got := n.Subscribers(db.LRPChangesChannel); got != 3 {
		t.Fatalf("%d subscribers after a Close, want 3", got)
	}
	cancel() // the rest end with their context
	deadline := time.Now().Add(5 * time.Second)
	for n.Subscribers(db.LRPChangesChannel)+n.Subscribers(testChannel) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := n.Subscribers(db.LRPChangesChannel) + n.Subscribers(testChannel); got != 0 {
		t.Fatalf("%d subscribers left after their context ended", got)
	}
}

// A commit that appends events notifies the events channel, and the LRP channel by process
// guid: what the hub, placement and rollout waits follow.
func TestNotifierHearsCommittedEvents(t *testing.T) {
	s, _ := notifyStore(t)
	n := s.Notifications()
	events := n.Subscribe(ctx, db.EventsChannel)
	defer events.Close()
	app := n.SubscribeKey(ctx, db.LRPChangesChannel, "app")
	defer app.Close()
	other := n.SubscribeKey(ctx, db.LRPChangesChannel, "other")
	defer other.Close()
	listen(t, n, db.EventsChannel, db.LRPChangesChannel)
	desire(t, s, newLRP("app", 1))
	woken(t, "the events channel", events)
	woken(t, "app", app)
	asleep(t, "other", other)
}

// Placement is woken by work for it only: an instance desired (UNCLAIMED) or a task desired
// (PENDING), not a claim or a start, which every rollout index writes too.
func TestPlacementHearsOnlyWorkForIt(t *testing.T) {
	s, _ := notifyStore(t)
	n := s.Notifications()
	placement := n.Subscribe(ctx, db.PlacementChannel)
	defer placement.Close()
	listen(t, n, db.PlacementChannel)
	desire(t, s, newLRP("app", 1))
	woken(t, "placement, by a desired instance", placement)
	if _, err := s.ClaimActualLRP(ctx, key("app", 0), cellA, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartActualLRP(ctx, key("app", 0), cellA, net, nil); err != nil {
		t.Fatal(err)
	}
	asleep(t, "placement, after a claim and a start", placement)
	task := &model.Task{TaskGUID: "t1", Domain: "d", TaskDefinition: model.TaskDefinition{RootFS: "preloaded:cflinuxfs4",
		Action: &model.Action{Run: &model.RunAction{Path: "/bin/true"}}}}
	if _, err := s.DesireTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	woken(t, "placement, by a desired task", placement)
}

// The notification connection is cut while subscribers wait, and stays down while a
// notification is sent: once it is back, (a) every subscriber, of every key of every
// channel, gets a resync, (b) so the one whose notification was lost wakes too, and (c)
// notifications flow again, to their own subscribers only. The outage is logged at warn.
func TestNotifierResyncsEverySubscriberAfterReconnect(t *testing.T) {
	s, logs, allow := notifyStoreAt(t)
	n := s.Notifications()
	subs := map[string]*db.Subscription{
		"lrp a":         n.SubscribeKey(ctx, db.LRPChangesChannel, "a"),
		"lrp b":         n.SubscribeKey(ctx, db.LRPChangesChannel, "b"),
		"lrp c":         n.SubscribeKey(ctx, db.LRPChangesChannel, "c"),
		"lrp channel":   n.Subscribe(ctx, db.LRPChangesChannel),
		"events":        n.Subscribe(ctx, db.EventsChannel),
		"test channel":  n.Subscribe(ctx, testChannel),
		"test key x":    n.SubscribeKey(ctx, testChannel, "x"),
		"events key no": n.SubscribeKey(ctx, db.EventsChannel, "no such key"),
	}
	for _, sub := range subs {
		defer sub.Close()
	}
	listen(t, n, db.LRPChangesChannel, db.EventsChannel, testChannel)
	// Notifications flow before the cut.
	notify(t, s.DB(), db.LRPChangesChannel, "a")
	if woken(t, "lrp a", subs["lrp a"]) {
		t.Fatal("a notification came as a resync")
	}
	woken(t, "lrp channel", subs["lrp channel"])

	// A connection of the test's own survives the outage: the database refuses new ones
	// until told otherwise, so the listener stays down as long as the test wants.
	conn, err := s.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	allow(false)
	var cut int
	if err := conn.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND application_name = $1`, db.ListenerApplicationName).Scan(&cut); err != nil {
		t.Fatal(err)
	}
	if cut != 1 {
		t.Fatalf("cut %d notification connections, want 1", cut)
	}
	waitLog(t, logs, zap.WarnLevel, "lost its connection")
	waitLog(t, logs, zap.WarnLevel, "cannot connect")
	// Sent while nobody listens: lost for good.
	notify(t, conn, db.LRPChangesChannel, "a")
	for name, sub := range subs {
		select {
		case <-sub.C:
			t.Fatalf("%s woke while the listener was down", name)
		default:
		}
	}
	allow(true)

	// (a), (b): every subscriber resyncs, "lrp a" among them.
	for name, sub := range subs {
		if !woken(t, name, sub) {
			t.Fatalf("%s woke after the reconnection without a resync", name)
		}
		if sub.Resynced() {
			t.Fatalf("%s: Resynced did not clear", name)
		}
	}
	waitLog(t, logs, zap.InfoLevel, "reconnected")

	// (c): notifications flow again, to their subscribers only.
	notify(t, s.DB(), db.LRPChangesChannel, "b")
	if woken(t, "lrp b", subs["lrp b"]) {
		t.Fatal("a notification after the reconnection came as a resync")
	}
	woken(t, "lrp channel", subs["lrp channel"])
	asleep(t, "lrp a", subs["lrp a"])
	asleep(t, "lrp c", subs["lrp c"])
	notify(t, s.DB(), testChannel, "x")
	woken(t, "test key x", subs["test key x"])
	woken(t, "test channel", subs["test channel"])
	asleep(t, "events", subs["events"])
	if got := listeners(t, s.DB()); got != 1 {
		t.Fatalf("%d notification connections after the reconnection, want 1", got)
	}
}

// A notifier whose first connection fails resyncs its subscribers once it connects: they may
// have read the store while it could not listen.
func TestNotifierResyncsAfterAFailedStart(t *testing.T) {
	s, logs, allow := notifyStoreAt(t)
	allow(false)
	n := s.Notifications()
	sub := n.SubscribeKey(ctx, db.LRPChangesChannel, "a")
	defer sub.Close()
	waitLog(t, logs, zap.WarnLevel, "cannot connect")
	allow(true)
	if !woken(t, "a", sub) {
		t.Fatal("the first connection, after failed attempts, woke a subscriber without a resync")
	}
	listen(t, n, db.LRPChangesChannel)
	notify(t, s.DB(), db.LRPChangesChannel, "a")
	if woken(t, "a", sub) {
		t.Fatal("a notification came as a resync")
	}
}

// Close ends the notification connection; subscriptions stay open and silent.
func TestNotifierClose(t *testing.T) {
	s, _ := notifyStore(t)
	n := s.Notifications()
	sub := n.Subscribe(ctx, testChannel)
	defer sub.Close()
	listen(t, n, testChannel)
	if got := listeners(t, s.DB()); got != 1 {
		t.Fatalf("%d notification connections, want 1", got)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for listeners(t, s.DB()) != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := listeners(t, s.DB()); got != 0 {
		t.Fatalf("%d notification connections after Close, want 0", got)
	}
	notify(t, s.DB(), testChannel, "")
	asleep(t, "a subscription of a closed notifier", sub)
	late := n.Subscribe(ctx, db.EventsChannel)
	defer late.Close()
	if err := n.Listen(ctx, db.EventsChannel); err == nil {
		t.Fatal("a closed notifier listens")
	}
}

// waitLog waits up to 10 s for an entry at level whose message contains text.
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
