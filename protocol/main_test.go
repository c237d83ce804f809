package protocol_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/recorders"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"
)

// TestMain starts (once) the throwaway PostgreSQL that dbtest.NewStore clones databases from,
// and stops the Temporal dev server the rollout tests share, if they started it.
func TestMain(m *testing.M) { dbtest.Main(m, temporaltest.StopShared) }

// server is the protocol listener over a fresh store, served over HTTP, with the cells and
// the rollout workflows recorded rather than reached.
type server struct {
	t        *testing.T
	url      string
	store    *db.Store
	stopper  *recorders.Stopper
	rollouts *recorders.Rollouts
	lrps     *lrps.Service
	tasks    *taskHooks
}

func newServer(t *testing.T) *server {
	t.Helper()
	store := dbtest.NewStore(t)
	stopper, rollouts, hooks := &recorders.Stopper{}, &recorders.Rollouts{}, &taskHooks{}
	log := zaptest.NewLogger(t)
	d := deps(store, stopper, rollouts, log)
	d.Tasks = hooks.service(store, log)
	s := protocol.NewServer(d)
	s.MarkReady()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return &server{t: t, url: ts.URL, store: store, stopper: stopper, rollouts: rollouts, lrps: d.LRPs, tasks: hooks}
}

// deps are a server's parts over store as a process builds them, with stopper and rollouts
// (either may be nil: no cells, no Temporal) standing in for the cells and the rollout
// workflows; no task service and no events until a test adds them.
func deps(store interface {
	protocol.Store
	lrps.Store
}, stopper lrps.Stopper, rollouts lrps.Rollouts, log *zap.Logger) protocol.Deps {
	service := lrps.NewService(store, stopper, rollouts, log)
	if gs, ok := store.(lrps.GroupStore); ok {
		service.WithGroups(gs, &recorders.Groups{})
	}
	return protocol.Deps{Store: store, LRPs: service, Groups: groupsOf(store), Log: log}
}

// groupsOf is store's reading of rollout groups, when it has one (the real store does).
func groupsOf(store any) protocol.GroupStore {
	g, _ := store.(protocol.GroupStore)
	return g
}

// postRaw posts body to path as BBS clients do and returns the raw answer.
func (s *server) postRaw(path string, body []byte) (*http.Response, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp, b
}

// post posts req (nil: an empty body) to path and decodes the protobuf answer into resp.
func (s *server) post(path string, req, resp proto.Message) {
	s.t.Helper()
	var body []byte
	if req != nil {
		var err error
		if body, err = proto.Marshal(req); err != nil {
			s.t.Fatal(err)
		}
	}
	r, b := s.postRaw(path, body)
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/x-protobuf" {
		s.t.Fatalf("POST %s: %d %q: %q", path, r.StatusCode, r.Header.Get("Content-Type"), b)
	}
	if err := proto.Unmarshal(b, resp); err != nil {
		s.t.Fatalf("POST %s: decode %T: %v", path, resp, err)
	}
}

func TestPing(t *testing.T) {
	s := newServer(t)
	var resp pb.PingResponse
	s.post("/v1/ping", nil, &resp)
	if !resp.GetAvailable() {
		t.Fatal("not available")
	}
}

func TestDomains(t *testing.T) {
	s := newServer(t)
	for _, d := range []*pb.UpsertDomainRequest{{Domain: "cf-apps", Ttl: 120}, {Domain: "cf-tasks"}} {
		var resp pb.UpsertDomainResponse
		s.post("/v1/domains/upsert", d, &resp)
		if resp.GetError() != nil {
			t.Fatalf("upsert %v: %v", d, resp.GetError())
		}
	}
	var list pb.DomainsResponse
	s.post("/v1/domains/list", nil, &list)
	if got := list.GetDomains(); len(got) != 2 || got[0] != "cf-apps" || got[1] != "cf-tasks" {
		t.Fatalf("domains = %v", got)
	}
	// Written through the protocol, read through the store the JSON API uses.
	fresh, err := s.store.FreshDomains(t.Context())
	if err != nil || len(fresh) != 2 {
		t.Fatalf("store's fresh domains = %v, %v", fresh, err)
	}
}

func TestCells(t *testing.T) {
	s := newServer(t)
	if err := s.store.UpsertCell(t.Context(), model.CellPresence{CellID: "cell-1", Zone: "z1", RepAddress: "https://10.0.0.1:1801",
		Capacity: model.CellCapacity{MemoryMB: 1024, DiskMB: 2048, Containers: 10}, PlacementTags: []string{"iso"}}, time.Minute); err != nil {
		t.Fatal(err)
	}
	var resp pb.CellsResponse
	s.post("/v1/cells/list.r1", nil, &resp)
	want := &pb.CellPresence{CellId: "cell-1", Zone: "z1", RepAddress: "https://10.0.0.1:1801", RepUrl: "https://10.0.0.1:1801",
		Capacity: &pb.CellCapacity{MemoryMb: 1024, DiskMb: 2048, Containers: 10}, PlacementTags: []string{"iso"}}
	if len(resp.GetCells()) != 1 || !proto.Equal(resp.GetCells()[0], want) {
		t.Fatalf("cells = %v, want %v", resp.GetCells(), want)
	}
}
