package protocol_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

var (
	cellA = model.ActualLRPInstanceKey{InstanceGUID: "ig-a", CellID: "cell-a"}
	cellB = model.ActualLRPInstanceKey{InstanceGUID: "ig-b", CellID: "cell-b"}
	netA  = model.ActualLRPNetInfo{Address: "10.0.0.1", InstanceAddress: "10.1.0.1",
		Ports: []model.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
)

// lrp is a desired LRP of the given instances, its one definition named after it.
func lrp(guid, domain string, instances int32) *model.DesiredLRP {
	return &model.DesiredLRP{
		ProcessGUID: guid, Domain: domain, Instances: instances,
		LRPDefinition: model.LRPDefinition{
			RootFS: "docker:///busybox", MemoryMB: 64, DiskMB: 64, Ports: []uint32{8080},
			Action: &model.Action{Run: &model.RunAction{Path: "/bin/sleep", Args: []string{"1000"}}},
		},
	}
}

func (s *server) desireModel(d *model.DesiredLRP) {
	s.t.Helper()
	if _, err := s.store.DesireLRP(s.t.Context(), d); err != nil {
		s.t.Fatal(err)
	}
}

func (s *server) cell(id, zone string) {
	s.t.Helper()
	if err := s.store.UpsertCell(s.t.Context(), model.CellPresence{CellID: id, Zone: zone, RepAddress: "http://" + id}, time.Minute); err != nil {
		s.t.Fatal(err)
	}
}

// run claims and starts the instance at key on the cell of ik, as its cell does.
func (s *server) run(key model.ActualLRPKey, ik model.ActualLRPInstanceKey, net model.ActualLRPNetInfo) *model.ActualLRP {
	s.t.Helper()
	if _, err := s.store.ClaimActualLRP(s.t.Context(), key, ik, nil); err != nil {
		s.t.Fatal(err)
	}
	a, err := s.store.StartActualLRP(s.t.Context(), key, ik, net, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return a
}

func key(guid string, index int32) model.ActualLRPKey {
	return model.ActualLRPKey{ProcessGUID: guid, Index: index, Domain: "cf-apps"}
}

// stored is the store's instance of guid at index of definition def.
func (s *server) stored(guid, def string, index int32) model.ActualLRP {
	s.t.Helper()
	lrps, err := s.store.ActualLRPs(s.t.Context(), model.ActualLRPFilter{ProcessGUID: guid, DefinitionID: def, Index: &index})
	if err != nil || len(lrps) != 1 {
		s.t.Fatalf("instances of %s/%s/%d: %+v, %v", guid, def, index, lrps, err)
	}
	return lrps[0]
}

// The wire bytes of one instance, built field by field from BBS-PROTOCOL.md §3: the keys,
// net info and modification tag always present, routable present when false (field 13, 0)
// and true when RUNNING, the cell's zone at 14, and our definition_id at 1000 of the key.
func TestActualLRPGoldenBytes(t *testing.T) {
	s := newServer(t)
	s.cell("cell-a", "z1")
	s.desireModel(lrp("app", "cf-apps", 2))
	s.run(key("app", 1), cellA, netA)
	unclaimed, running := s.stored("app", "app", 0), s.stored("app", "app", 1)

	tag := func(a model.ActualLRP) []byte {
		if a.ModificationTag.Index == 0 { // proto3's default, not sent
			return str(1, a.ModificationTag.Epoch)
		}
		return fields(str(1, a.ModificationTag.Epoch), varint(2, uint64(a.ModificationTag.Index)))
	}
	wantUnclaimed := fields(
		sub(1, fields(str(1, "app"), str(3, "cf-apps"), str(1000, "app"))), // index 0 is proto3's default
		sub(2, nil),
		sub(3, nil),
		str(6, "UNCLAIMED"),
		varint(8, uint64(unclaimed.Since)),
		sub(9, tag(unclaimed)),
		varint(13, 0),
	)
	wantRunning := fields(
		sub(1, fields(str(1, "app"), varint(2, 1), str(3, "cf-apps"), str(1000, "app"))),
		sub(2, fields(str(1, "ig-a"), str(2, "cell-a"))),
		sub(3, fields(str(1, "10.0.0.1"), sub(2, fields(varint(1, 8080), varint(2, 61001))), str(3, "10.1.0.1"))),
		str(6, "RUNNING"),
		varint(8, uint64(running.Since)),
		sub(9, tag(running)),
		varint(13, 1),
		str(14, "z1"),
	)
	r, body := s.postRaw("/v1/actual_lrps/list", mustMarshal(t, &pb.ActualLRPsRequest{ProcessGuid: "app"}))
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/x-protobuf" {
		t.Fatalf("%d %q", r.StatusCode, r.Header.Get("Content-Type"))
	}
	if want := fields(sub(2, wantUnclaimed), sub(2, wantRunning)); !bytes.Equal(body, want) {
		t.Fatalf("list answers\n%x\nwant\n%x", body, want)
	}
}

// fields concatenates encoded fields.
func fields(fs ...[]byte) []byte { return bytes.Join(fs, nil) }

func str(n protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, n, protowire.BytesType), s)
}

func sub(n protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, n, protowire.BytesType), b)
}

func varint(n protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, n, protowire.VarintType), v)
}

// list posts an ActualLRPsRequest and returns the instances, as (process guid, definition,
// index, state) strings.
func (s *server) list(req *pb.ActualLRPsRequest) []string {
	s.t.Helper()
	var resp pb.ActualLRPsResponse
	s.post("/v1/actual_lrps/list", req, &resp)
	if resp.GetError() != nil {
		s.t.Fatalf("list %v: %v", req, resp.GetError())
	}
	return names(resp.GetActualLrps())
}

func names(lrps []*pb.ActualLRP) []string {
	out := []string{}
	for _, a := range lrps {
		k := a.GetActualLrpKey()
		out = append(out, k.GetProcessGuid()+"/"+k.GetDefinitionId()+"/"+strconv.Itoa(int(k.GetIndex()))+"/"+a.GetState()+
			"/"+a.GetPresence().String())
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestListActualLRPsFilters(t *testing.T) {
	s := newServer(t)
	s.cell("cell-a", "z1")
	s.cell("cell-b", "z2")
	s.desireModel(lrp("web", "cf-apps", 2))
	s.desireModel(lrp("worker", "other", 1))
	s.run(key("web", 1), cellA, netA)
	s.run(model.ActualLRPKey{ProcessGUID: "worker", Index: 0, Domain: "other"}, cellB, netA)
	zero, two := int32(0), int32(2)
	for _, tc := range []struct {
		name string
		req  *pb.ActualLRPsRequest
		want []string
	}{
		{"all", &pb.ActualLRPsRequest{}, []string{"web/web/0/UNCLAIMED/ORDINARY", "web/web/1/RUNNING/ORDINARY", "worker/worker/0/RUNNING/ORDINARY"}},
		{"domain", &pb.ActualLRPsRequest{Domain: "other"}, []string{"worker/worker/0/RUNNING/ORDINARY"}},
		{"cell", &pb.ActualLRPsRequest{CellId: "cell-a"}, []string{"web/web/1/RUNNING/ORDINARY"}},
		{"process guid", &pb.ActualLRPsRequest{ProcessGuid: "web"}, []string{"web/web/0/UNCLAIMED/ORDINARY", "web/web/1/RUNNING/ORDINARY"}},
		{"index 0, present", &pb.ActualLRPsRequest{ProcessGuid: "web", Index: &zero}, []string{"web/web/0/UNCLAIMED/ORDINARY"}},
		{"index beyond", &pb.ActualLRPsRequest{ProcessGuid: "web", Index: &two}, []string{}},
		{"index without a process guid", &pb.ActualLRPsRequest{Index: &zero}, []string{"web/web/0/UNCLAIMED/ORDINARY", "worker/worker/0/RUNNING/ORDINARY"}},
		{"negative index", &pb.ActualLRPsRequest{Index: proto.Int32(-1)}, []string{}},
		{"definition", &pb.ActualLRPsRequest{DefinitionId: "worker"}, []string{"worker/worker/0/RUNNING/ORDINARY"}},
		{"nothing matches", &pb.ActualLRPsRequest{ProcessGuid: "web", CellId: "cell-b"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.list(tc.req); !equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("by process guids", func(t *testing.T) {
		var resp pb.ActualLRPsByProcessGuidsResponse
		s.post("/v1/actual_lrps/list_by_process_guids", &pb.ActualLRPsByProcessGuidsRequest{ProcessGuids: []string{"worker", "web", "worker", "", "none"}}, &resp)
		want := []string{"worker/worker/0/RUNNING/ORDINARY", "web/web/0/UNCLAIMED/ORDINARY", "web/web/1/RUNNING/ORDINARY"}
		if got := names(resp.GetActualLrps()); resp.GetError() != nil || !equal(got, want) {
			t.Fatalf("got %v (%v), want %v", got, resp.GetError(), want)
		}
		s.post("/v1/actual_lrps/list_by_process_guids", &pb.ActualLRPsByProcessGuidsRequest{}, &resp)
		if e := resp.GetError(); e.GetType() != pb.Error_InvalidRequest || e.GetMessage() != "process_guids must not be empty" {
			t.Fatalf("no process guids: %v", e)
		}
	})
}

// A list answer streamed entry by entry is exactly the bytes proto.Marshal gives the whole
// ActualLRPsResponse: a short one goes out whole with its Content-Length, a long one in
// chunks as the rows come.
func TestStreamedListIsProtoMarshal(t *testing.T) {
	s := newServer(t)
	s.cell("cell-a", "z1")
	s.desireModel(lrp("few", "cf-apps", 3))
	s.desireModel(lrp("many", "cf-apps", 1000)) // about 100 KB of instances: more than one write
	s.run(key("few", 2), cellA, netA)
	for _, tc := range []struct {
		guid    string
		n       int
		chunked bool
	}{{"few", 3, false}, {"many", 1000, true}, {"", 1003, true}} {
		r, body := s.postRaw("/v1/actual_lrps/list", mustMarshal(t, &pb.ActualLRPsRequest{ProcessGuid: tc.guid}))
		var resp pb.ActualLRPsResponse
		if err := proto.Unmarshal(body, &resp); err != nil || len(resp.GetActualLrps()) != tc.n {
			t.Fatalf("%q: %d instances, %v", tc.guid, len(resp.GetActualLrps()), err)
		}
		whole, err := proto.MarshalOptions{Deterministic: true}.Marshal(&resp)
		if err != nil || !bytes.Equal(body, whole) {
			t.Fatalf("%q: the streamed answer (%d bytes) is not proto.Marshal of its message (%d bytes)", tc.guid, len(body), len(whole))
		}
		if plain, _ := proto.Marshal(&resp); !bytes.Equal(body, plain) {
			t.Fatalf("%q: the streamed answer differs from proto.Marshal's", tc.guid)
		}
		if chunked := len(r.TransferEncoding) > 0; chunked != tc.chunked || (!chunked && r.ContentLength != int64(len(body))) {
			t.Fatalf("%q: transfer encoding %v, content length %d of %d bytes; want chunked %v", tc.guid,
				r.TransferEncoding, r.ContentLength, len(body), tc.chunked)
		}
	}
}

// cutStore fails a list after its first `after` instances, as when the database goes away
// mid-list.
type cutStore struct {
	*db.Store
	after int
}

func (c cutStore) EachActualLRP(ctx context.Context, f model.ActualLRPFilter, fn func(*model.ActualLRP) error) error {
	n := 0
	return c.Store.EachActualLRP(ctx, f, func(a *model.ActualLRP) error {
		if n++; n > c.after {
			return model.Errorf(model.ErrUnavailable, "connection lost")
		}
		return fn(a)
	})
}

// A list that fails before its answer began is an ordinary answer for its error (for
// Unavailable, BBS's bare 503); one that fails after is cut (the connection aborted), never
// closed as if it were whole.
func TestListCutShortIsAborted(t *testing.T) {
	store := dbtest.NewStore(t)
	if _, err := store.DesireLRP(t.Context(), lrp("many", "cf-apps", 1000)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		after   int
		aborted bool
	}{{1, false}, {900, true}} { // 900 instances are more than one write
		srv := protocol.NewServer(deps(cutStore{store, tc.after}, nil, nil, zaptest.NewLogger(t)))
		srv.MarkReady()
		ts := httptest.NewServer(srv)
		resp, err := http.Post(ts.URL+"/v1/actual_lrps/list", "application/x-protobuf", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		ts.Close()
		if tc.aborted {
			if resp.StatusCode != http.StatusOK || err == nil {
				t.Fatalf("cut after %d: %d, %d bytes read whole (%v); want the answer aborted", tc.after, resp.StatusCode, len(body), err)
			}
			continue
		}
		if resp.StatusCode != http.StatusServiceUnavailable || len(body) != 0 {
			t.Fatalf("cut after %d: %d %q, want BBS's bare 503 for Unavailable", tc.after, resp.StatusCode, body)
		}
	}
}

// Two definitions at one index during a rollout: the lists by process guid answer the
// instance that serves each index (the old one while the new one starts, then the new one),
// the fleet and cell lists both, a definition_id filter its own, and the groups one per
// definition and index.
func TestTwoInstancesAtOneIndex(t *testing.T) {
	s := newServer(t)
	s.cell("cell-a", "z1")
	s.cell("cell-b", "z2")
	s.desireModel(lrp("web", "cf-apps", 1))
	s.run(model.ActualLRPKey{ProcessGUID: "web", DefinitionID: "web", Index: 0, Domain: "cf-apps"}, cellA, netA)
	v2 := lrp("web", "cf-apps", 1).LRPDefinition
	v2.DefinitionID = "v2"
	if _, err := s.store.StartRollout(t.Context(), db.RolloutRequest{ProcessGUID: "web", Kind: model.RolloutKindUpdate, Definition: &v2}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.DesireInstance(t.Context(), "web", "v2", 0); err != nil {
		t.Fatal(err)
	}
	byGUID := func() []string {
		var resp pb.ActualLRPsByProcessGuidsResponse
		s.post("/v1/actual_lrps/list_by_process_guids", &pb.ActualLRPsByProcessGuidsRequest{ProcessGuids: []string{"web"}}, &resp)
		return names(resp.GetActualLrps())
	}
	zero := int32(0)
	check := func(when string, serving string) {
		t.Helper()
		both := []string{"web/v2/0/" + state(s, "v2") + "/ORDINARY", "web/web/0/" + state(s, "web") + "/ORDINARY"}
		for name, got := range map[string][]string{
			"process guid":           s.list(&pb.ActualLRPsRequest{ProcessGuid: "web"}),
			"process guid and index": s.list(&pb.ActualLRPsRequest{ProcessGuid: "web", Index: &zero}),
			"by process guids":       byGUID(),
		} {
			if !equal(got, []string{serving}) {
				t.Errorf("%s, list by %s: %v, want only %s", when, name, got, serving)
			}
		}
		if got := s.list(&pb.ActualLRPsRequest{}); !equal(got, both) {
			t.Errorf("%s, the fleet: %v, want %v", when, got, both)
		}
		if got := s.list(&pb.ActualLRPsRequest{ProcessGuid: "web", DefinitionId: "v2"}); !equal(got, both[:1]) {
			t.Errorf("%s, definition v2: %v, want %v", when, got, both[:1])
		}
		var groups pb.ActualLRPGroupsResponse
		s.post("/v1/actual_lrp_groups/list_by_process_guid", &pb.ActualLRPGroupsByProcessGuidRequest{ProcessGuid: "web"}, &groups)
		if n := len(groups.GetActualLrpGroups()); n != 2 {
			t.Errorf("%s: %d groups, want one per definition at the index", when, n)
		}
	}
	check("while v2 starts", "web/web/0/RUNNING/ORDINARY")
	s.run(model.ActualLRPKey{ProcessGUID: "web", DefinitionID: "v2", Index: 0, Domain: "cf-apps"}, cellB, netA)
	if _, err := s.store.RetireOthers(t.Context(), "web", "v2", 0); err != nil {
		t.Fatal(err)
	}
	check("once v2 runs and the old one retires", "web/v2/0/RUNNING/ORDINARY")
	if got := s.list(&pb.ActualLRPsRequest{CellId: "cell-a"}); !equal(got, []string{"web/web/0/RUNNING/ORDINARY"}) {
		t.Errorf("the old instance's cell lists %v, want its retiring instance", got)
	}
	// The active definition's group (seed 000).
	var g pb.ActualLRPGroupResponse
	s.post("/v1/actual_lrp_groups/get_by_process_guid_and_index", &pb.ActualLRPGroupByProcessGuidAndIndexRequest{ProcessGuid: "web"}, &g)
	if d := g.GetActualLrpGroup().GetInstance().GetActualLrpKey().GetDefinitionId(); d != "v2" || g.GetError() != nil {
		t.Errorf("group at index 0: definition %q (%v), want v2", d, g.GetError())
	}
}

func state(s *server, def string) string { return s.stored("web", def, 0).State }

func TestActualLRPGroups(t *testing.T) {
	s := newServer(t)
	s.cell("cell-a", "z1")
	s.desireModel(lrp("web", "cf-apps", 2))
	s.run(key("web", 0), cellA, netA)
	// Cell a drains: the instance is kept as EVACUATING while it is placed again.
	if _, err := s.store.EvacuateRunningActualLRP(t.Context(), key("web", 0), cellA, netA); err != nil {
		t.Fatal(err)
	}
	var list pb.ActualLRPGroupsResponse
	s.post("/v1/actual_lrp_groups/list", &pb.ActualLRPGroupsRequest{}, &list)
	groups := list.GetActualLrpGroups()
	if len(groups) != 2 || groups[0].GetInstance().GetState() != "UNCLAIMED" || groups[0].GetEvacuating().GetState() != "RUNNING" ||
		groups[0].GetEvacuating().GetActualLrpInstanceKey().GetCellId() != "cell-a" || groups[1].GetEvacuating() != nil {
		t.Fatalf("groups = %v", groups)
	}
	s.post("/v1/actual_lrp_groups/list", &pb.ActualLRPGroupsRequest{CellId: "cell-a"}, &list)
	if g := list.GetActualLrpGroups(); len(g) != 1 || g[0].GetInstance() != nil || g[0].GetEvacuating() == nil {
		t.Fatalf("groups on cell-a = %v", g)
	}

	var one pb.ActualLRPGroupResponse
	s.post("/v1/actual_lrp_groups/get_by_process_guid_and_index", &pb.ActualLRPGroupByProcessGuidAndIndexRequest{ProcessGuid: "web", Index: 1}, &one)
	if one.GetError() != nil || one.GetActualLrpGroup().GetInstance().GetActualLrpKey().GetIndex() != 1 {
		t.Fatalf("group at index 1 = %v", &one)
	}
	for _, tc := range []struct {
		req  *pb.ActualLRPGroupByProcessGuidAndIndexRequest
		want *pb.Error
	}{
		{&pb.ActualLRPGroupByProcessGuidAndIndexRequest{ProcessGuid: "web", Index: 7},
			&pb.Error{Type: pb.Error_ResourceNotFound, Message: "the requested resource could not be found"}},
		{&pb.ActualLRPGroupByProcessGuidAndIndexRequest{Index: -1},
			&pb.Error{Type: pb.Error_InvalidRequest, Message: "Invalid field: process_guid, Invalid field: index"}},
	} {
		var resp pb.ActualLRPGroupResponse
		s.post("/v1/actual_lrp_groups/get_by_process_guid_and_index", tc.req, &resp)
		if !proto.Equal(resp.GetError(), tc.want) || resp.GetActualLrpGroup() != nil {
			t.Errorf("%v: %v, want %v", tc.req, &resp, tc.want)
		}
	}
	s.post("/v1/actual_lrp_groups/list_by_process_guid", &pb.ActualLRPGroupsByProcessGuidRequest{}, &list)
	if e := list.GetError(); e.GetType() != pb.Error_InvalidRequest || e.GetMessage() != "Invalid field: process_guid" {
		t.Fatalf("groups of no process guid: %v", e)
	}
}

// stops records the instances retire hands to their cells.
type stops struct {
	mu  sync.Mutex
	got []model.ActualLRP
}

func (s *stops) StopInstances(_ context.Context, lrps []model.ActualLRP) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, lrps...)
	return nil
}

func TestRetireActualLRP(t *testing.T) {
	store := dbtest.NewStore(t)
	stopper := &stops{}
	srv := protocol.NewServer(deps(store, stopper, nil, zaptest.NewLogger(t)))
	srv.MarkReady()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	s := &server{t: t, url: ts.URL, store: store}
	s.desireModel(lrp("web", "cf-apps", 2))
	s.run(key("web", 1), cellA, netA)

	retire := func(k *pb.ActualLRPKey) *pb.Error {
		t.Helper()
		var resp pb.ActualLRPLifecycleResponse
		s.post("/v1/actual_lrps/retire", &pb.RetireActualLRPRequest{ActualLrpKey: k}, &resp)
		return resp.GetError()
	}
	// An UNCLAIMED instance is gone at once.
	if e := retire(&pb.ActualLRPKey{ProcessGuid: "web", Index: 0, Domain: "cf-apps"}); e != nil {
		t.Fatal(e)
	}
	if got := s.list(&pb.ActualLRPsRequest{ProcessGuid: "web"}); !equal(got, []string{"web/web/1/RUNNING/ORDINARY"}) {
		t.Fatalf("after retiring index 0: %v", got)
	}
	// A RUNNING one is handed to its cell to stop, and stops being routable at once.
	if e := retire(&pb.ActualLRPKey{ProcessGuid: "web", Index: 1, Domain: "cf-apps", DefinitionId: "web"}); e != nil {
		t.Fatal(e)
	}
	if len(stopper.got) != 1 || stopper.got[0].InstanceGUID != "ig-a" {
		t.Fatalf("stops = %+v", stopper.got)
	}
	var resp pb.ActualLRPsResponse
	s.post("/v1/actual_lrps/list", &pb.ActualLRPsRequest{ProcessGuid: "web", Index: proto.Int32(1)}, &resp)
	if a := resp.GetActualLrps(); len(a) != 1 || a[0].Routable == nil || a[0].GetRoutable() {
		t.Fatalf("the retired instance = %v, want present with routable false", a)
	}

	for _, tc := range []struct {
		name string
		key  *pb.ActualLRPKey
		want *pb.Error
	}{
		{"missing", &pb.ActualLRPKey{ProcessGuid: "gone", Index: 0, Domain: "cf-apps"},
			&pb.Error{Type: pb.Error_ResourceNotFound, Message: "the requested resource could not be found"}},
		{"no key", nil, &pb.Error{Type: pb.Error_InvalidRequest, Message: "Invalid field: actual_lrp_key"}},
		{"empty key", &pb.ActualLRPKey{Index: -1},
			&pb.Error{Type: pb.Error_InvalidRequest, Message: "Invalid field: process_guid, Invalid field: index, Invalid field: domain"}},
	} {
		if e := retire(tc.key); !proto.Equal(e, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, e, tc.want)
		}
	}
}
