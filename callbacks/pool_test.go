package callbacks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/callbacks"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/testwait"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap/zaptest"
)

// TestMain gives the package's tests a real PostgreSQL and stops it afterwards (without it,
// every run left its throwaway server behind).
func TestMain(m *testing.M) { dbtest.Main(m) }

// receiver counts the callbacks of each task; it answers 503 while down.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  map[string]int
	down bool
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{got: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var cb model.TaskCallbackResponse
		if err := json.NewDecoder(req.Body).Decode(&cb); err != nil {
			t.Errorf("callback: %v", err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		r.got[cb.TaskGUID]++
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.got {
		out[k] = v
	}
	return out
}

// handOvers records the callbacks handed over to Temporal.
type handOvers struct {
	mu  sync.Mutex
	got map[string]int // attempts
}

func (h *handOvers) HandOverCallback(_ context.Context, guid string, attempts int, _ string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got[guid] = attempts
	return nil
}

func (h *handOvers) attempts(guid string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got[guid]
}

func completeTasks(t *testing.T, s *db.Store, url string, guids ...string) {
	t.Helper()
	ctx := context.Background()
	for _, g := range guids {
		task := &model.Task{TaskGUID: g, Domain: "cf-tasks", TaskDefinition: model.TaskDefinition{RootFS: "preloaded:x",
			Action: &model.Action{Run: &model.RunAction{Path: "/bin/true"}}, CompletionCallbackURL: url}}
		if _, err := s.DesireTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.StartTask(ctx, g, "cell"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CompleteTask(ctx, g, "cell", false, "", "ok"); err != nil {
			t.Fatal(err)
		}
	}
}

func startPool(t *testing.T, s *db.Store, h callbacks.HandOver, opts callbacks.Options) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	p := callbacks.NewPool(s, s.Notifications(), h, opts, zaptest.NewLogger(t))
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}

func taskCount(t *testing.T, s *db.Store) int {
	var n int
	if err := s.DB().QueryRow(`SELECT count(*) FROM tasks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Two pools deliver 300 tasks between them, each exactly once, and delete every one.
func TestPoolsDeliverEachOnce(t *testing.T) {
	s := dbtest.NewStore(t)
	recv := newReceiver(t)
	h := &handOvers{got: map[string]int{}}
	startPool(t, s, h, callbacks.Options{Size: 50})
	startPool(t, s, h, callbacks.Options{Size: 50})
	const n = 300
	guids := make([]string, n)
	for i := range guids {
		guids[i] = fmt.Sprintf("t-%03d", i)
	}
	completeTasks(t, s, recv.URL, guids...)
	testwait.Until(t, time.Minute, 20*time.Millisecond, "every task delivered and deleted", func() bool {
		return len(recv.counts()) == n && taskCount(t, s) == 0
	})
	for g, c := range recv.counts() {
		if c != 1 {
			t.Errorf("%s delivered %d times", g, c)
		}
	}
}

// A receiver that stays down gets the pool's attempts, then the callback is handed over to
// Temporal and the pools leave it alone.
func TestPoolHandsOverAReceiverThatStaysDown(t *testing.T) {
	s := dbtest.NewStore(t)
	recv := newReceiver(t)
	recv.mu.Lock()
	recv.down = true
	recv.mu.Unlock()
	h := &handOvers{got: map[string]int{}}
	startPool(t, s, h, callbacks.Options{Attempts: 3, FirstRetry: 10 * time.Millisecond, Poll: 50 * time.Millisecond})
	completeTasks(t, s, recv.URL, "down")
	testwait.Until(t, time.Minute, 20*time.Millisecond, "the hand-over", func() bool { return h.attempts("down") == 3 })
	var handed bool
	var attempts int
	var lastError string
	if err := s.DB().QueryRow(`SELECT callback_handed_over, callback_attempts, callback_last_error FROM tasks WHERE task_guid = 'down'`).
		Scan(&handed, &attempts, &lastError); err != nil {
		t.Fatal(err)
	}
	if !handed || attempts != 3 || lastError != "callback receiver answered 503" {
		t.Fatalf("handed over %v after %d attempts, last error %q", handed, attempts, lastError)
	}
	got, err := s.CallbackForWorkflow(context.Background(), "down")
	if err != nil || got == nil {
		t.Fatalf("the workflow's claim = %+v, %v", got, err)
	}
}

// The claims of a pool that died are delivered by another once their lease runs out.
func TestPoolTakesOverADeadPoolsClaims(t *testing.T) {
	s := dbtest.NewStore(t)
	recv := newReceiver(t)
	completeTasks(t, s, recv.URL, "orphan")
	if claims, err := s.ClaimCallbacks(context.Background(), "dead-worker", 10, time.Hour); err != nil || len(claims) != 1 {
		t.Fatalf("claim = %+v, %v", claims, err)
	}
	h := &handOvers{got: map[string]int{}}
	startPool(t, s, h, callbacks.Options{Poll: 50 * time.Millisecond})
	if _, err := s.DB().Exec(`UPDATE tasks SET callback_claimed_until = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, 20*time.Millisecond, "the orphan delivered", func() bool {
		return recv.counts()["orphan"] == 1 && taskCount(t, s) == 0
	})
}

// A receiver's refusal (a 4xx) ends the delivery, as in BBS: the task is deleted, not
// retried nor handed over.
func TestPoolResolvesARefusal(t *testing.T) {
	s := dbtest.NewStore(t)
	var mu sync.Mutex
	calls := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
	}))
	defer recv.Close()
	h := &handOvers{got: map[string]int{}}
	startPool(t, s, h, callbacks.Options{})
	completeTasks(t, s, recv.URL, "refused")
	testwait.Until(t, time.Minute, 20*time.Millisecond, "the refused task deleted", func() bool { return taskCount(t, s) == 0 })
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 || h.attempts("refused") != 0 {
		t.Fatalf("%d calls, handed over after %d attempts", calls, h.attempts("refused"))
	}
}

// A pool that stops gives up the claim of a callback it had not delivered, so that another
// pool need not wait for the lease.
func TestPoolReleasesItsClaimsWhenItStops(t *testing.T) {
	s := dbtest.NewStore(t)
	posted := make(chan struct{}, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server notices the client going away
		select {
		case posted <- struct{}{}:
		default:
		}
		<-r.Context().Done() // never answers: the pool stops meanwhile
	}))
	defer recv.Close()
	stop := startPool(t, s, &handOvers{got: map[string]int{}}, callbacks.Options{Lease: time.Hour})
	completeTasks(t, s, recv.URL, "in-flight")
	<-posted
	stop()
	var owner string
	if err := s.DB().QueryRow(`SELECT callback_claimed_by FROM tasks WHERE task_guid = 'in-flight'`).Scan(&owner); err != nil || owner != "" {
		t.Fatalf("claimed by %q after the pool stopped: %v", owner, err)
	}
	claims, err := s.ClaimCallbacks(context.Background(), "another-pool", 10, time.Minute)
	if err != nil || len(claims) != 1 || claims[0].Attempts != 0 {
		t.Fatalf("another pool's claim = %+v, %v", claims, err)
	}
}
