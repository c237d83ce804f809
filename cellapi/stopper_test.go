package cellapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/model"
)

// fakeCell is an httptest cell that records the stops it is sent, in order. Before it
// answers it calls hold, when set, so that a test can see what reaches cells at once.
type fakeCell struct {
	srv    *httptest.Server
	mu     sync.Mutex
	stops  []cellapi.StopRequest
	status int // answered instead of 200 when set
	hold   func()
}

func newFakeCell(t *testing.T) *fakeCell {
	c := &fakeCell{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != cellapi.StopPath {
			http.NotFound(w, r)
			return
		}
		var req cellapi.StopRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.stops = append(c.stops, req)
		status, hold := c.status, c.hold
		c.mu.Unlock()
		if hold != nil {
			hold()
		}
		if status != 0 {
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]any{"error": model.Errorf(model.ErrResourceNotFound, "no container for %s", req.InstanceGUID)})
			return
		}
		w.Write([]byte("{}"))
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// received is the instance guids of the stops the cell got, in order.
func (c *fakeCell) received() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, s := range c.stops {
		out = append(out, s.InstanceGUID)
	}
	return out
}

// addressBook is a CellAddresses over a fixed map that records what it was asked.
type addressBook struct {
	addrs map[string]string
	mu    sync.Mutex
	asked [][]string
	err   error
}

func (b *addressBook) CellAddresses(_ context.Context, ids []string) (map[string]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, slices.Clone(ids))
	out := map[string]string{}
	for _, id := range ids {
		if a, ok := b.addrs[id]; ok {
			out[id] = a
		}
	}
	return out, b.err
}

func instance(guid string, index int32, cellID string) model.ActualLRP {
	return model.ActualLRP{
		ActualLRPKey:         model.ActualLRPKey{ProcessGUID: guid, DefinitionID: "def", Index: index, Domain: "d"},
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: guid + "-" + cellID + "-" + string(rune('0'+index)), CellID: cellID},
		State:                model.StateRunning,
	}
}

func guids(lrps ...model.ActualLRP) []string {
	var out []string
	for _, a := range lrps {
		out = append(out, a.InstanceGUID)
	}
	return out
}

func TestStopperSendsEachStopToItsCellInOrder(t *testing.T) {
	a, b := newFakeCell(t), newFakeCell(t)
	book := &addressBook{addrs: map[string]string{"cell-a": a.srv.URL, "cell-b": b.srv.URL, "cell-idle": "http://127.0.0.1:1"}}
	s := &cellapi.Stopper{Cells: book, Client: cellapi.NewClient(nil)}

	a0, b1, a2, a3, unclaimed := instance("p", 0, "cell-a"), instance("p", 1, "cell-b"), instance("p", 2, "cell-a"), instance("q", 3, "cell-a"), instance("p", 4, "")
	if err := s.StopInstances(context.Background(), []model.ActualLRP{a0, b1, a2, unclaimed, a3}); err != nil {
		t.Fatal(err)
	}
	if got, want := a.received(), guids(a0, a2, a3); !slices.Equal(got, want) {
		t.Errorf("cell-a got %v, want %v", got, want)
	}
	if got, want := b.received(), guids(b1); !slices.Equal(got, want) {
		t.Errorf("cell-b got %v, want %v", got, want)
	}
	// One lookup, of the cells the batch names and nothing else (not the instance on no cell).
	if len(book.asked) != 1 || !slices.Equal(book.asked[0], []string{"cell-a", "cell-b"}) {
		t.Errorf("addresses asked %v, want one lookup of [cell-a cell-b]", book.asked)
	}
	if a.stops[0].Key != a0.ActualLRPKey {
		t.Errorf("stop key %+v, want %+v", a.stops[0].Key, a0.ActualLRPKey)
	}
}

func TestStopperStopsDifferentCellsConcurrently(t *testing.T) {
	// Each cell holds its first stop until every cell has one: sent one cell after the
	// other, the stops would never all arrive.
	const n = 3
	var arrived sync.WaitGroup
	arrived.Add(n)
	release := make(chan struct{})
	go func() { arrived.Wait(); close(release) }()
	book := &addressBook{addrs: map[string]string{}}
	var lrps []model.ActualLRP
	var cells []*fakeCell
	for i := range n {
		c := newFakeCell(t)
		var once sync.Once
		c.hold = func() {
			once.Do(arrived.Done)
			select {
			case <-release:
			case <-time.After(5 * time.Second):
			}
		}
		id := "cell-" + string(rune('a'+i))
		book.addrs[id] = c.srv.URL
		lrps = append(lrps, instance("p", int32(2*i), id), instance("p", int32(2*i+1), id))
		cells = append(cells, c)
	}
	s := &cellapi.Stopper{Cells: book, Client: cellapi.NewClient(nil)}
	start := time.Now()
	if err := s.StopInstances(context.Background(), lrps); err != nil {
		t.Fatal(err)
	}
	select {
	case <-release:
	default:
		t.Fatalf("the cells never held a stop at the same time (took %v)", time.Since(start))
	}
	for i, c := range cells {
		if got := c.received(); len(got) != 2 {
			t.Errorf("cell %d got %v, want 2 stops", i, got)
		}
	}
}

func TestStopperBoundsTheCellsInFlight(t *testing.T) {
	var mu sync.Mutex
	inFlight, most := 0, 0
	hold := func() {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
	}
	book := &addressBook{addrs: map[string]string{}}
	var lrps []model.ActualLRP
	for i := range 6 {
		c := newFakeCell(t)
		c.hold = hold
		id := "cell-" + string(rune('a'+i))
		book.addrs[id] = c.srv.URL
		lrps = append(lrps, instance("p", int32(i), id))
	}
	s := &cellapi.Stopper{Cells: book, Client: cellapi.NewClient(nil), MaxCells: 2}
	if err := s.StopInstances(context.Background(), lrps); err != nil {
		t.Fatal(err)
	}
	if most > 2 {
		t.Fatalf("%d cells stopped at once, want at most 2", most)
	}
}

func TestStopperSkipsCellsThatAreGone(t *testing.T) {
	live := newFakeCell(t)
	book := &addressBook{addrs: map[string]string{"cell-live": live.srv.URL}}
	s := &cellapi.Stopper{Cells: book, Client: cellapi.NewClient(nil)}
	gone, here := instance("p", 0, "cell-gone"), instance("p", 1, "cell-live")
	if err := s.StopInstances(context.Background(), []model.ActualLRP{gone, here}); err != nil {
		t.Fatalf("a cell that is gone is no error: %v", err)
	}
	if got := live.received(); !slices.Equal(got, guids(here)) {
		t.Fatalf("live cell got %v", got)
	}
	if err := s.StopInstances(context.Background(), nil); err != nil || len(book.asked) != 1 {
		t.Fatalf("an empty batch: %v, lookups %v", err, book.asked)
	}
}

func TestStopperReportsTheFirstFailureWithItsInstanceAndCell(t *testing.T) {
	refusing, fine := newFakeCell(t), newFakeCell(t)
	refusing.status = http.StatusNotFound
	// A listener that is closed: the cell cannot be reached.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	book := &addressBook{addrs: map[string]string{"cell-refusing": refusing.srv.URL, "cell-fine": fine.srv.URL, "cell-down": down.URL}}
	s := &cellapi.Stopper{Cells: book, Client: cellapi.NewClient(nil)}

	ok0, r1, d2, r3, d4, ok5 := instance("p", 0, "cell-fine"), instance("p", 1, "cell-refusing"), instance("p", 2, "cell-down"),
		instance("p", 3, "cell-refusing"), instance("p", 4, "cell-down"), instance("p", 5, "cell-fine")
	err := s.StopInstances(context.Background(), []model.ActualLRP{ok0, r1, d2, r3, d4, ok5})
	if err == nil {
		t.Fatal("no error")
	}
	// The first failure in the batch's order is index 1 on the refusing cell, and the cell's
	// own error type comes through.
	if msg := err.Error(); !strings.Contains(msg, "stop p/1") || !strings.Contains(msg, "cell-refusing") || !strings.Contains(msg, "2 other stops failed") {
		t.Fatalf("error %q lacks the instance, the cell or the count of other failures", msg)
	}
	if !model.IsType(err, model.ErrResourceNotFound) {
		t.Fatalf("error %v does not carry the cell's error type", err)
	}
	// A cell that answers still gets its other stops; the others are unaffected.
	if got := refusing.received(); !slices.Equal(got, guids(r1, r3)) {
		t.Fatalf("refusing cell got %v", got)
	}
	if got := fine.received(); !slices.Equal(got, guids(ok0, ok5)) {
		t.Fatalf("fine cell got %v", got)
	}
}

func TestStopperReportsALookupFailure(t *testing.T) {
	book := &addressBook{err: errors.New("database unavailable")}
	s := &cellapi.Stopper{Cells: book, Client: cellapi.NewClient(nil)}
	err := s.StopInstances(context.Background(), []model.ActualLRP{instance("p", 0, "cell-a")})
	if err == nil || !strings.Contains(err.Error(), "database unavailable") {
		t.Fatalf("err = %v", err)
	}
}

func TestStopperSendsNoMoreToACellThatCannotBeReached(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	s := &cellapi.Stopper{Cells: &addressBook{addrs: map[string]string{"cell-down": down.URL}}, Client: cellapi.NewClient(nil)}
	err := s.StopInstances(context.Background(), []model.ActualLRP{instance("p", 0, "cell-down"), instance("p", 1, "cell-down"), instance("p", 2, "cell-down")})
	if err == nil || !strings.Contains(err.Error(), "stop p/0") || !strings.Contains(err.Error(), "its 2 other stops not sent") {
		t.Fatalf("err = %v", err)
	}
}
