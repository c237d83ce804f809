package compat

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"code.cloudfoundry.org/bbs"
	"code.cloudfoundry.org/bbs/models"
	"code.cloudfoundry.org/lager/v3"
	"github.com/gogo/protobuf/proto"
)

// errorCase is a call that BBS answers with an error in its response, which the real client
// returns as a *models.Error.
type errorCase struct {
	name string
	// route is the route the call goes through (a bbs.*Route_* name); the case waits until
	// the listener serves it (served, in routes_test.go).
	route string
	call  func(t *testing.T, c bbs.InternalClient, log lager.Logger) error
	// want is the error BBS answers. When nil, the call sends invalid, a request BBS's own
	// validation refuses, and want is the InvalidRequest that carries its message.
	want    *models.Error
	invalid validatable
}

type validatable interface {
	proto.Message
	Validate() error
}

// TestErrorsAreBBSErrors: errors come back as *models.Error with BBS's type and exact message:
// Cloud Controller matches some of them as strings, and validation messages list the fields
// in BBS's order.
func TestErrorsAreBBSErrors(t *testing.T) {
	lrp := func(guid string, edit func(*models.DesiredLRP)) *models.DesiredLRP {
		l := validLRP(t, guid)
		edit(l)
		return l
	}
	negative := lrp("compat-negative-instances", func(l *models.DesiredLRP) { l.Instances = -1 })
	missing := "compat-no-such-guid"
	// badTask breaks most of TaskDefinition's rules at once, so that the order of BBS's
	// messages is compared too.
	badTask := &models.TaskDefinition{
		RootFs: "cflinuxfs4", MemoryMb: -1, DiskMb: -1, MaxPids: -1, LogRateLimit: &models.LogRateLimit{BytesPerSecond: -2},
		Action:             models.WrapAction(&models.RunAction{Path: "/bin/true"}),
		EgressRules:        []*models.SecurityGroupRule{{Protocol: "tcp", Destinations: []string{"10.0.0.1"}}},
		ImagePassword:      "p",
		CachedDependencies: []*models.CachedDependency{{From: "https://x", ChecksumValue: "v"}},
		ImageLayers: []*models.ImageLayer{{Url: "u", DestinationPath: "/", LayerType: models.LayerTypeExclusive,
			MediaType: models.MediaTypeTgz}},
	}
	cases := []errorCase{
		{
			name:  "upsert a domain without a name",
			route: bbs.UpsertDomainRoute_r0,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				return c.UpsertDomain(log, traceID(t), "", time.Minute)
			},
			want: &models.Error{Type: models.Error_InvalidRequest, Message: "Invalid field: domain"},
		},
		{
			name:  "upsert a domain with a body that is not protobuf",
			route: bbs.UpsertDomainRoute_r0,
			call: func(t *testing.T, _ bbs.InternalClient, _ lager.Logger) error {
				var resp models.UpsertDomainResponse
				return postGarbage(t, "/v1/domains/upsert", &resp, func() *models.Error { return resp.Error })
			},
			want: models.ErrBadRequest,
		},
		{
			name:  "desire an empty desired LRP",
			route: bbs.DesireDesiredLRPRoute_r2,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				return c.DesireLRP(log, traceID(t), &models.DesiredLRP{})
			},
			invalid: &models.DesireLRPRequest{DesiredLrp: &models.DesiredLRP{}},
		},
		{
			name:  "desire a desired LRP of -1 instances",
			route: bbs.DesireDesiredLRPRoute_r2,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				return c.DesireLRP(log, traceID(t), negative)
			},
			invalid: &models.DesireLRPRequest{DesiredLrp: negative},
		},
		{
			name:  "desire a process guid twice",
			route: bbs.DesireDesiredLRPRoute_r2,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				if err := c.DesireLRP(log, traceID(t), validLRP(t, "compat-twice")); err != nil {
					return fmt.Errorf("the first desire failed: %w", err)
				}
				return c.DesireLRP(log, traceID(t), validLRP(t, "compat-twice"))
			},
			want: models.ErrResourceExists,
		},
		{
			name:  "get a desired LRP that does not exist",
			route: bbs.DesiredLRPByProcessGuidRoute_r3,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				_, err := c.DesiredLRPByProcessGuid(log, traceID(t), missing)
				return err
			},
			want: models.ErrResourceNotFound,
		},
		{
			name:  "update a desired LRP that does not exist",
			route: bbs.UpdateDesiredLRPRoute_r0,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				update := &models.DesiredLRPUpdate{}
				update.SetInstances(1)
				return c.UpdateDesiredLRP(log, traceID(t), missing, update)
			},
			want: models.ErrResourceNotFound,
		},
		{
			name:  "remove a desired LRP that does not exist",
			route: bbs.RemoveDesiredLRPRoute_r0,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				return c.RemoveDesiredLRP(log, traceID(t), missing)
			},
			want: models.ErrResourceNotFound,
		},
		{
			name:  "retire an actual LRP that does not exist",
			route: bbs.RetireActualLRPRoute_r0,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				key := models.NewActualLRPKey(missing, 0, "compat")
				return c.RetireActualLRP(log, traceID(t), &key)
			},
			want: models.ErrResourceNotFound,
		},
		{
			name:  "get a task that does not exist",
			route: bbs.TaskByGuidRoute_r3,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				_, err := c.TaskByGuid(log, traceID(t), missing)
				return err
			},
			want: models.ErrResourceNotFound,
		},
		{
			name:  "cancel a task that does not exist",
			route: bbs.CancelTaskRoute_r0,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				return c.CancelTask(log, traceID(t), missing)
			},
			want: models.ErrResourceNotFound,
		},
		{
			name:  "desire a task with an empty definition",
			route: bbs.DesireTaskRoute_r2,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				return c.DesireTask(log, traceID(t), "compat-empty", "compat", &models.TaskDefinition{})
			},
			invalid: &models.DesireTaskRequest{TaskGuid: "compat-empty", Domain: "compat", TaskDefinition: &models.TaskDefinition{}},
		},
		{
			name:  "desire a task BBS refuses on many counts",
			route: bbs.DesireTaskRoute_r2,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				return c.DesireTask(log, traceID(t), "a.b", "", badTask)
			},
			invalid: &models.DesireTaskRequest{TaskGuid: "a.b", TaskDefinition: badTask},
		},
		{
			name:  "desire a task with a body that is not protobuf",
			route: bbs.DesireTaskRoute_r2,
			call: func(t *testing.T, _ bbs.InternalClient, _ lager.Logger) error {
				var resp models.TaskLifecycleResponse
				return postGarbage(t, "/v1/tasks/desire.r2", &resp, func() *models.Error { return resp.Error })
			},
			want: models.ErrBadRequest,
		},
		{
			name:  "start a task without a cell",
			route: bbs.StartTaskRoute_r0,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				_, err := c.StartTask(log, traceID(t), missing, "")
				return err
			},
			invalid: &models.StartTaskRequest{TaskGuid: missing},
		},
		{
			name:  "complete a task without a cell",
			route: bbs.CompleteTaskRoute_r0,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				return c.CompleteTask(log, traceID(t), missing, "", false, "", "")
			},
			invalid: &models.CompleteTaskRequest{TaskGuid: missing},
		},
		{
			name:  "reject a task without a reason",
			route: bbs.RejectTaskRoute_r0,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				return c.RejectTask(log, traceID(t), missing, "")
			},
			invalid: &models.RejectTaskRequest{TaskGuid: missing},
		},
		{
			name:  "fail a task without a reason",
			route: bbs.FailTaskRoute_r0,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				return c.FailTask(log, traceID(t), missing, "")
			},
			invalid: &models.FailTaskRequest{TaskGuid: missing},
		},
		{
			name:  "get a task without a guid",
			route: bbs.TaskByGuidRoute_r3,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				_, err := c.TaskByGuid(log, traceID(t), "")
				return err
			},
			invalid: &models.TaskByGuidRequest{},
		},
		{
			name:  "resolve a task that does not exist",
			route: bbs.ResolvingTaskRoute_r0,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				return c.ResolvingTask(log, traceID(t), missing)
			},
			want: models.ErrResourceNotFound,
		},
		{
			name:  "delete a task without a guid",
			route: bbs.DeleteTaskRoute_r0,
			call: func(t *testing.T, c bbs.InternalClient, log lager.Logger) error {
				return c.DeleteTask(log, traceID(t), "")
			},
			invalid: &models.TaskGuidRequest{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !served[tc.route] {
				t.Skipf("waits for route %s, which the listener does not serve yet (served, in routes_test.go)", tc.route)
			}
			want := tc.want
			if want == nil {
				want = invalidRequest(t, tc.invalid)
			}
			err := tc.call(t, newClient(t), testLogger(t))
			var got *models.Error
			if !errors.As(err, &got) {
				t.Fatalf("error %#v (%v), want a *models.Error %s %q", err, err, want.Type, want.Message)
			}
			if got.Type != want.Type || got.Message != want.Message {
				t.Errorf("error %s %q, want %s %q", got.Type, got.Message, want.Type, want.Message)
			}
		})
	}
}

// invalidRequest is what BBS answers req, a request its validation refuses: its handlers
// decode the body and answer Error{InvalidRequest, Validate().Error()}. So does this, with
// the real models code, on what the server decodes (an empty map, for one, arrives as nil).
func invalidRequest(t *testing.T, req validatable) *models.Error {
	t.Helper()
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatalf("marshal %T: %v", req, err)
	}
	decoded := reflect.New(reflect.TypeOf(req).Elem()).Interface().(validatable)
	if err := proto.Unmarshal(b, decoded); err != nil {
		t.Fatalf("unmarshal %T: %v", req, err)
	}
	verr := decoded.Validate()
	if verr == nil {
		t.Fatalf("the case is wrong: its %T passes BBS's validation", req)
	}
	return models.NewError(models.Error_InvalidRequest, verr.Error())
}

// postGarbage POSTs bytes that are no protobuf message to path and returns the error of the
// answer, decoded into resp (errOf reads it).
func postGarbage(t *testing.T, path string, resp proto.Message, errOf func() *models.Error) error {
	t.Helper()
	// Field 1 with wire type 7, which does not exist.
	status, ctype, err := postProto(http.DefaultClient, sys.protocolURL+path, []byte{0x0f, 0xff, 0xff}, resp)
	if err != nil {
		return err
	}
	if status != http.StatusOK || ctype != protoContentType {
		return fmt.Errorf("POST %s answered %d %q, want 200 %s", path, status, ctype, protoContentType)
	}
	if e := errOf(); e != nil {
		return e
	}
	return nil
}

// validLRP is a desired LRP that passes BBS's validation, of no instances (nothing to run).
func validLRP(t *testing.T, guid string) *models.DesiredLRP {
	t.Helper()
	lrp := &models.DesiredLRP{
		ProcessGuid: guid,
		Domain:      "compat",
		RootFs:      "preloaded:cflinuxfs4",
		Instances:   0,
		MemoryMb:    64,
		DiskMb:      64,
		Action:      models.WrapAction(&models.RunAction{Path: "/bin/sleep", Args: []string{"3600"}, User: "vcap"}),
		MetricTags:  map[string]*models.MetricTagValue{"source_id": {Static: guid}},
	}
	if err := lrp.Validate(); err != nil {
		t.Fatalf("validLRP(%s) does not pass BBS's validation: %v", guid, err)
	}
	return lrp
}
