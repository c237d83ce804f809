package cellapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/model"
)

func TestClientPerformSendsTheWorkAndReturnsTheRejections(t *testing.T) {
	key := model.ActualLRPKey{ProcessGUID: "p", DefinitionID: "def", Index: 1, Domain: "d"}
	var got cellapi.PerformRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != cellapi.WorkPath {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		json.NewDecoder(r.Body).Decode(&got)
		json.NewEncoder(w).Encode(cellapi.PerformResponse{Rejected: []cellapi.Rejection{{Key: key, Reason: "full"}},
			RejectedTasks: []cellapi.TaskRejection{{TaskGUID: "t", Reason: "draining"}}})
	}))
	defer srv.Close()
	resp, err := cellapi.NewClient(nil).Perform(context.Background(), srv.URL+"/", cellapi.PerformRequest{
		LRPs:  []cellapi.Work{{Key: key}},
		Tasks: []cellapi.TaskWork{{TaskGUID: "t", Domain: "d", Definition: model.TaskDefinition{ResultFile: "r"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.LRPs) != 1 || got.LRPs[0].Key != key || len(got.Tasks) != 1 || got.Tasks[0].Definition.ResultFile != "r" {
		t.Fatalf("cell got %+v", got)
	}
	rej := resp.Rejected
	if len(rej) != 1 || rej[0].Key != key || rej[0].Reason != "full" {
		t.Fatalf("rejections %+v", rej)
	}
	if len(resp.RejectedTasks) != 1 || resp.RejectedTasks[0] != (cellapi.TaskRejection{TaskGUID: "t", Reason: "draining"}) {
		t.Fatalf("task rejections %+v", resp.RejectedTasks)
	}
}

func TestClientStateReadsTheCellsContainers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != cellapi.StatePath {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		w.Write([]byte(`{"cell_id":"c1","evacuating":true,"containers":[{"instance_guid":"g","state":"COMPLETED","result":{"failed":true,"stopped":true}}]}`))
	}))
	defer srv.Close()
	st, err := cellapi.NewClient(nil).State(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if st.CellID != "c1" || !st.Evacuating || len(st.Containers) != 1 || st.Containers[0].State != "COMPLETED" || !st.Containers[0].Result.Stopped {
		t.Fatalf("state %+v", st)
	}
}

func TestClientErrorsTellAnAnswerFromNoAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]any{"error": model.Errorf(model.ErrResourceNotFound, "no container")})
	}))
	c := cellapi.NewClient(nil)
	err := c.Stop(context.Background(), srv.URL, cellapi.StopRequest{InstanceGUID: "g"})
	var se *cellapi.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || !model.IsType(err, model.ErrResourceNotFound) {
		t.Fatalf("err = %#v", err)
	}
	srv.Close()
	err = c.Evacuate(context.Background(), srv.URL)
	if err == nil || errors.As(err, &se) {
		t.Fatalf("a cell that is not listening: err = %v, want a transport error", err)
	}
}
