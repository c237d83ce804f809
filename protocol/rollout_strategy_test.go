package protocol_test

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

func p[T any](v T) *T { return &v }

// A strategy given through the protocol comes back exactly as given (a given 0 stays a 0,
// not given stays absent), is kept apart from the definition it is desired with, and
// resolves a rollout field by field over the LRP's default and the server's, as at the JSON
// API (ROLLOUTS-NEXT.md section 1).
func TestRolloutStrategyRoundTrip(t *testing.T) {
	s := newServer(t)
	def := &pb.RolloutStrategy{MaxInFlight: p(int32(2)), MinReadyMs: p(int64(0)), ProgressDeadlineMs: p(int64(0)),
		IndexDeadlineMs: p(int64(60000)), OnFailure: p("pause"), Failure: &pb.FailurePolicy{MaxCrashes: p(int32(5))},
		Analysis: &pb.RolloutAnalysis{MaxErrorRateRatio: p(1.5), MaxCrashRate: p(0.0), Background: p(false), OnInconclusive: p("fail")}}
	d := minimalDesiredLRP("web")
	d.RolloutStrategy = def
	s.desire(d)
	for _, rev := range []string{"r3", "r2"} {
		if got := s.get(rev, "web").GetRolloutStrategy(); !proto.Equal(got, def) {
			t.Fatalf("read back (%s): %v, want %v", rev, got, def)
		}
	}
	m, err := s.store.DesiredLRPByProcessGUID(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	if m.RolloutStrategy == nil || m.RolloutStrategy.MinReadyMS == nil || *m.RolloutStrategy.MinReadyMS != 0 ||
		m.RolloutStrategy.Window != nil || *m.RolloutStrategy.Analysis.MaxErrorRateRatio != 1.5 {
		t.Fatalf("stored: %+v", m.RolloutStrategy)
	}
	// The LRP's default is the LRP's, not its definition's.
	var asDesired pb.DesiredLRP
	if err := proto.Unmarshal(m.Protobuf, &asDesired); err != nil {
		t.Fatal(err)
	}
	if asDesired.RolloutStrategy != nil || len(asDesired.ProtoReflect().GetUnknown()) != 0 {
		t.Fatalf("the definition's protobuf holds the strategy: %v", &asDesired)
	}

	// rollout_strategy alone replaces the default, whole.
	pace := &pb.RolloutStrategy{MaxInFlight: p(int32(3))}
	if err := s.update("web", &pb.DesiredLRPUpdate{RolloutStrategy: pace}); err != nil {
		t.Fatalf("update rollout_strategy: %v", err)
	}
	if got := s.get("r3", "web"); !proto.Equal(got.GetRolloutStrategy(), pace) || got.GetModificationTag().GetIndex() != 1 {
		t.Fatalf("after the update: %v (tag %v)", got.GetRolloutStrategy(), got.GetModificationTag())
	}

	// An update's strategy resolves over the default and the server's; it leaves the default.
	update := &pb.RolloutStrategy{OnFailure: p("continue"), Failure: &pb.FailurePolicy{MaxFailedIndices: p(int32(2))}}
	if err := s.update("web", &pb.DesiredLRPUpdate{Definition: definitionOf(t, minimalDesiredLRP("web"), "v2"), Strategy: update}); err != nil {
		t.Fatalf("update with a strategy: %v", err)
	}
	r, err := s.store.RolloutByProcessGUID(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	rs := r.Strategy
	if rs == nil || rs.MaxInFlightOr(0) != 3 || *rs.OnFailure != "continue" || *rs.Failure.MaxFailedIndices != 2 ||
		*rs.Failure.MaxCrashes != 3 || rs.IndexDeadlineMSOr(0) != 300000 {
		t.Fatalf("resolved strategy: %+v", rs)
	}
	if got := s.get("r3", "web").GetRolloutStrategy(); !proto.Equal(got, pace) {
		t.Fatalf("the update's strategy changed the default: %v", got)
	}

	// The LRP deployment routes read it back, and give it at create and update.
	var dep pb.LRPDeploymentResponse
	s.post("/v1/lrp_deployments/get_by_process_guid", &pb.LRPDeploymentByProcessGuidRequest{ProcessGuid: "web"}, &dep)
	if !proto.Equal(dep.GetLrpDeployment().GetRolloutStrategy(), pace) {
		t.Fatalf("deployment: %v", dep.GetLrpDeployment().GetRolloutStrategy())
	}
	created := &pb.RolloutStrategy{IndexDeadlineMs: p(int64(90000))}
	var lifecycle pb.LRPDeploymentLifecycleResponse
	s.post("/v1/lrp_deployments/create", &pb.CreateLRPDeploymentRequest{LrpDeploymentDefinition: &pb.LRPDeploymentDefinition{
		ProcessGuid: "dep", Domain: "cf-apps", Instances: 1, DefinitionId: "v1", Definition: definitionOf(t, minimalDesiredLRP("dep"), ""),
		RolloutStrategy: created}}, &lifecycle)
	if lifecycle.GetError() != nil {
		t.Fatalf("create: %v", lifecycle.GetError())
	}
	var list pb.LRPDeploymentsResponse
	s.post("/v1/lrp_deployments/list", &pb.LRPDeploymentsRequest{ProcessGuids: []string{"dep"}}, &list)
	if len(list.GetLrpDeployments()) != 1 || !proto.Equal(list.GetLrpDeployments()[0].GetRolloutStrategy(), created) {
		t.Fatalf("list: %v", list.GetLrpDeployments())
	}
	s.post("/v1/lrp_deployments/update", &pb.UpdateLRPDeploymentRequest{ProcessGuid: "dep",
		Update:   &pb.LRPDeploymentUpdate{DefinitionId: p("v2"), Definition: definitionOf(t, minimalDesiredLRP("dep"), "")},
		Strategy: &pb.RolloutStrategy{MaxInFlight: p(int32(4))}, RolloutStrategy: pace}, &lifecycle)
	if lifecycle.GetError() != nil {
		t.Fatalf("update: %v", lifecycle.GetError())
	}
	if got := s.get("r3", "dep").GetRolloutStrategy(); !proto.Equal(got, pace) {
		t.Fatalf("dep's default after the update: %v", got)
	}
	// The update's rollout resolves over the default it set in the same transaction.
	if r, err := s.store.RolloutByProcessGUID(t.Context(), "dep"); err != nil || r.Strategy.MaxInFlightOr(0) != 4 || r.Strategy.IndexDeadlineMSOr(0) != 300000 {
		t.Fatalf("dep's rollout: %+v, %v", r, err)
	}

	// Activate (superseding) and roll back (once the rollout is over) with a strategy.
	s.post("/v1/lrp_deployments/activate", &pb.ActivateLRPDeploymentDefinitionRequest{ProcessGuid: "dep", DefinitionId: "v1",
		Strategy: &pb.RolloutStrategy{MaxInFlight: p(int32(5))}}, &lifecycle)
	if lifecycle.GetError() != nil {
		t.Fatalf("activate: %v", lifecycle.GetError())
	}
	if r, err := s.store.RolloutByProcessGUID(t.Context(), "dep"); err != nil || r.ToDefinitionID != "v1" || r.Strategy.MaxInFlightOr(0) != 5 {
		t.Fatalf("dep's rollout after activate: %+v, %v", r, err)
	}
	if _, err := s.store.DB().ExecContext(t.Context(), `UPDATE rollouts SET state = 'completed' WHERE process_guid = 'web'`); err != nil {
		t.Fatal(err)
	}
	var rollback pb.DesiredLRPLifecycleResponse
	s.post("/v1/desired_lrp/rollback", &pb.RollbackDesiredLRPRequest{ProcessGuid: "web", DefinitionId: "web",
		Strategy: &pb.RolloutStrategy{MaxInFlight: p(int32(6))}}, &rollback)
	if rollback.GetError() != nil {
		t.Fatalf("rollback: %v", rollback.GetError())
	}
	if r, err := s.store.RolloutByProcessGUID(t.Context(), "web"); err != nil || r.ToDefinitionID != "web" || r.Strategy.MaxInFlightOr(0) != 6 ||
		*r.Strategy.OnFailure != "revert" {
		t.Fatalf("web's rollout after rollback: %+v, %v", r, err)
	}
	want := []string{"start:web:v2", "start:dep:v2", "supersede:dep:v1", "start:web:web"}
	if calls := s.rollouts.Calls(); !reflect.DeepEqual(calls, want) {
		t.Fatalf("workflow calls = %v, want %v", calls, want)
	}
}

// A strategy the model refuses, or that this server does not carry out yet, is InvalidRequest
// wherever it is given, and nothing is written or started.
func TestRefusedStrategiesWriteNothing(t *testing.T) {
	s := newServer(t)
	s.desire(minimalDesiredLRP("web"))
	// web runs v2 now, so that a rollback or an activation to web would start.
	if err := s.update("web", &pb.DesiredLRPUpdate{Definition: definitionOf(t, minimalDesiredLRP("web"), "v2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.DB().ExecContext(t.Context(), `UPDATE rollouts SET state = 'completed'`); err != nil {
		t.Fatal(err)
	}
	v3 := func() *pb.LRPDefinition { return definitionOf(t, minimalDesiredLRP("web"), "v3") }
	for _, c := range []struct {
		name     string
		strategy *pb.RolloutStrategy
		mention  string
	}{
		{"weight over 100", &pb.RolloutStrategy{Canary: &pb.CanaryStrategy{Steps: []*pb.CanaryStep{{Weight: p(int32(120))}}}}, "weight must be between 0 and 100"},
		{"unknown on_failure", &pb.RolloutStrategy{OnFailure: p("explode")}, "on_failure"},
		{"canary without steps", &pb.RolloutStrategy{Canary: &pb.CanaryStrategy{}}, "steps"},
		{"zero in flight", &pb.RolloutStrategy{MaxInFlight: p(int32(0))}, "max_in_flight"},
		{"a NaN ratio", &pb.RolloutStrategy{Analysis: &pb.RolloutAnalysis{MaxErrorRateRatio: p(math.NaN())}}, "finite"},
		{"an unknown window", &pb.RolloutStrategy{Window: p("maintenance")}, "window"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := minimalDesiredLRP("new")
			d.RolloutStrategy = c.strategy
			for _, req := range []struct {
				path string
				msg  proto.Message
			}{
				{"/v1/desired_lrp/desire.r2", &pb.DesireLRPRequest{DesiredLrp: d}},
				{"/v1/desired_lrp/update", &pb.UpdateDesiredLRPRequest{ProcessGuid: "web", Update: &pb.DesiredLRPUpdate{Definition: v3(), Strategy: c.strategy}}},
				{"/v1/desired_lrp/update", &pb.UpdateDesiredLRPRequest{ProcessGuid: "web", Update: &pb.DesiredLRPUpdate{RolloutStrategy: c.strategy}}},
				{"/v1/desired_lrp/rollback", &pb.RollbackDesiredLRPRequest{ProcessGuid: "web", DefinitionId: "web", Strategy: c.strategy}},
				{"/v1/lrp_deployments/create", &pb.CreateLRPDeploymentRequest{LrpDeploymentDefinition: &pb.LRPDeploymentDefinition{
					ProcessGuid: "new", Domain: "cf-apps", DefinitionId: "v3", Definition: v3(), RolloutStrategy: c.strategy}}},
				{"/v1/lrp_deployments/update", &pb.UpdateLRPDeploymentRequest{ProcessGuid: "web",
					Update: &pb.LRPDeploymentUpdate{DefinitionId: p("v3"), Definition: v3()}, Strategy: c.strategy}},
				{"/v1/lrp_deployments/update", &pb.UpdateLRPDeploymentRequest{ProcessGuid: "web", Update: &pb.LRPDeploymentUpdate{}, RolloutStrategy: c.strategy}},
				{"/v1/lrp_deployments/activate", &pb.ActivateLRPDeploymentDefinitionRequest{ProcessGuid: "web", DefinitionId: "web", Strategy: c.strategy}},
			} {
				refused(t, s, req.path, req.msg, c.mention)
			}
		})
	}
	// strategy is the rollout's: without a definition there is none.
	refused(t, s, "/v1/desired_lrp/update", &pb.UpdateDesiredLRPRequest{ProcessGuid: "web",
		Update: &pb.DesiredLRPUpdate{Strategy: &pb.RolloutStrategy{MaxInFlight: p(int32(2))}}}, "give definition beside it")
	refused(t, s, "/v1/lrp_deployments/update", &pb.UpdateLRPDeploymentRequest{ProcessGuid: "web",
		Strategy: &pb.RolloutStrategy{MaxInFlight: p(int32(2))}}, "give definition beside it")
	// break_glass passes a freeze for one update, never by default.
	refused(t, s, "/v1/desired_lrp/update", &pb.UpdateDesiredLRPRequest{ProcessGuid: "web",
		Update: &pb.DesiredLRPUpdate{RolloutStrategy: &pb.RolloutStrategy{BreakGlass: p("incident")}}}, "break_glass")
	if calls := s.rollouts.Calls(); !reflect.DeepEqual(calls, []string{"start:web:v2"}) {
		t.Fatalf("workflow calls for refused requests: %v", calls)
	}
}

// refused posts req to path and checks that it is InvalidRequest naming mention, and that
// nothing changed.
func refused(t *testing.T, s *server, path string, req proto.Message, mention string) {
	t.Helper()
	before := s.snapshot()
	var resp pb.DesiredLRPLifecycleResponse // field 1 of every answer here
	s.post(path, req, &resp)
	if e := resp.GetError(); e.GetType() != pb.Error_InvalidRequest || !strings.Contains(e.GetMessage(), mention) {
		t.Errorf("%s: error = %v, want InvalidRequest naming %q", path, e, mention)
	}
	if !bytes.Equal(s.snapshot(), before) {
		t.Errorf("%s: the refused request changed the store", path)
	}
}

// control posts a rollout control and returns its error (nil when it worked).
func (s *server) control(path string, req proto.Message) *pb.Error {
	s.t.Helper()
	var resp pb.RolloutControlResponse
	s.post("/v1/rollouts/"+path, req, &resp)
	return resp.GetError()
}

// The controls of section 3 on the protocol: refused clearly when they do not apply,
// recorded when they do.
func TestRolloutControlsThroughTheProtocol(t *testing.T) {
	s := newServer(t)
	s.desire(minimalDesiredLRP("web"))
	controls := map[string]func(guid string) proto.Message{
		"pause":  func(g string) proto.Message { return &pb.PauseRolloutRequest{ProcessGuid: g} },
		"resume": func(g string) proto.Message { return &pb.ResumeRolloutRequest{ProcessGuid: g} },
		"abort":  func(g string) proto.Message { return &pb.AbortRolloutRequest{ProcessGuid: g, Reason: "r"} },
		"set_pace": func(g string) proto.Message {
			return &pb.SetRolloutPaceRequest{ProcessGuid: g, MaxInFlight: p(int32(2))}
		},
		"promote": func(g string) proto.Message { return &pb.PromoteRolloutRequest{ProcessGuid: g} },
	}
	expect := func(what string, e *pb.Error, typ pb.Error_Type, msg string) {
		t.Helper()
		if e.GetType() != typ || !strings.Contains(e.GetMessage(), msg) {
			t.Errorf("%s: error = %v, want %s with %q", what, e, typ, msg)
		}
	}
	for path, req := range controls {
		expect(path+" unknown", s.control(path, req("nope")), pb.Error_ResourceNotFound, "the requested resource could not be found")
		expect(path+" no rollout", s.control(path, req("web")), pb.Error_ResourceConflict, `LRP "web" has no rollout in progress`)
		expect(path+" no guid", s.control(path, req("")), pb.Error_InvalidRequest, "Invalid field: process_guid")
	}
	expect("set_pace without max_in_flight", s.control("set_pace", &pb.SetRolloutPaceRequest{ProcessGuid: "web"}),
		pb.Error_InvalidRequest, "Invalid field: max_in_flight")
	expect("set_pace to 0", s.control("set_pace", &pb.SetRolloutPaceRequest{ProcessGuid: "web", MaxInFlight: p(int32(0))}),
		pb.Error_InvalidRequest, "max_in_flight must be between 1 and")
	expect("abort with a long reason", s.control("abort", &pb.AbortRolloutRequest{ProcessGuid: "web", Reason: strings.Repeat("x", 1025)}),
		pb.Error_InvalidRequest, "reason")

	if err := s.update("web", &pb.DesiredLRPUpdate{Definition: definitionOf(t, minimalDesiredLRP("web"), "v2")}); err != nil {
		t.Fatal(err)
	}
	expect("resume while walking, never paused", s.control("resume", &pb.ResumeRolloutRequest{ProcessGuid: "web"}),
		pb.Error_ResourceConflict, "is in phase walking, not paused")
	for _, step := range []struct {
		path string
		req  proto.Message
	}{
		{"pause", &pb.PauseRolloutRequest{ProcessGuid: "web"}},
		{"pause", &pb.PauseRolloutRequest{ProcessGuid: "web"}}, // repeated: the workflow changes nothing
		{"resume", &pb.ResumeRolloutRequest{ProcessGuid: "web"}},
		{"resume", &pb.ResumeRolloutRequest{ProcessGuid: "web"}}, // repeated after it took effect: nothing changes
		{"set_pace", &pb.SetRolloutPaceRequest{ProcessGuid: "web", MaxInFlight: p(int32(4))}},
	} {
		if e := s.control(step.path, step.req); e != nil {
			t.Fatalf("%s: %v", step.path, e)
		}
	}
	if r, err := s.store.RolloutByProcessGUID(t.Context(), "web"); err != nil || r.Strategy.MaxInFlightOr(0) != 4 || *r.Strategy.OnFailure != "revert" {
		t.Fatalf("after set_pace: %+v, %v", r, err)
	}
	expect("promote while walking", s.control("promote", &pb.PromoteRolloutRequest{ProcessGuid: "web", Full: true}),
		pb.Error_ResourceConflict, "is in phase walking")
	if e := s.control("abort", &pb.AbortRolloutRequest{ProcessGuid: "web", Reason: "p99 doubled"}); e != nil {
		t.Fatalf("abort: %v", e)
	}

	// Reverting (the row canceling): pause does not apply; a resume repeated after the one
	// that took effect changes nothing; without one, only a revert its failure holds resumes.
	exec := func(stmt string) {
		t.Helper()
		if _, err := s.store.DB().ExecContext(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE rollouts SET state = 'canceling'`)
	expect("pause while reverting", s.control("pause", &pb.PauseRolloutRequest{ProcessGuid: "web"}), pb.Error_ResourceConflict, "reverting")
	if e := s.control("resume", &pb.ResumeRolloutRequest{ProcessGuid: "web"}); e != nil {
		t.Fatalf("resume while reverting: %v", e)
	}
	exec(`UPDATE rollouts SET last_control = ''`)
	expect("resume while reverting, never paused", s.control("resume", &pb.ResumeRolloutRequest{ProcessGuid: "web"}),
		pb.Error_ResourceConflict, "is in phase reverting, not paused")
	exec(`UPDATE rollouts SET revert_failure = '{"reason": "crash_loop", "kind": "app"}'`)
	if e := s.control("resume", &pb.ResumeRolloutRequest{ProcessGuid: "web"}); e != nil {
		t.Fatalf("resume of a held revert: %v", e)
	}
	want := []string{"start:web:v2", "control-pause:web:v2", "control-pause:web:v2", "control-resume:web:v2", "control-resume:web:v2",
		"control-set_pace:web:v2", "control-abort:web:v2", "control-resume:web:v2", "control-resume:web:v2"}
	if calls := s.rollouts.Calls(); !reflect.DeepEqual(calls, want) {
		t.Fatalf("workflow calls = %v, want %v", calls, want)
	}
}

// A stock client's bytes of a DesiredLRP carry no strategy: it reads back without one, and
// our model has none (not an empty one that would resolve differently).
func TestNoStrategyStaysNone(t *testing.T) {
	s := newServer(t)
	s.desire(minimalDesiredLRP("web"))
	if got := s.get("r3", "web"); got.RolloutStrategy != nil {
		t.Fatalf("read back %v", got.RolloutStrategy)
	}
	m, err := s.store.DesiredLRPByProcessGUID(t.Context(), "web")
	if err != nil || m.RolloutStrategy != nil {
		t.Fatalf("stored %+v, %v", m.RolloutStrategy, err)
	}
	// An empty strategy is a given one: every field resolves over the server's.
	if err := s.update("web", &pb.DesiredLRPUpdate{RolloutStrategy: &pb.RolloutStrategy{}}); err != nil {
		t.Fatal(err)
	}
	if got := s.get("r3", "web").GetRolloutStrategy(); got == nil || !proto.Equal(got, &pb.RolloutStrategy{}) {
		t.Fatalf("an empty default read back as %v", got)
	}
}
