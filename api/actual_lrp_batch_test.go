package api_test

import (
	"net/http"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

func batchItem(guid string, index int, cell string) obj {
	return obj{
		"actual_lrp_key":          obj{"process_guid": guid, "definition_id": guid, "index": index, "domain": "d"},
		"actual_lrp_instance_key": obj{"instance_guid": guid + "-ig-" + cell, "cell_id": cell},
		"actual_lrp_net_info":     obj{"address": "10.0.0.9", "ports": []obj{{"container_port": 8080, "host_port": 61001}}},
	}
}

func TestBatchClaimAndStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("app", "d", 2, nil))

	res := h.ok("/v1/actual_lrps/claim_batch", obj{"instances": []obj{
		batchItem("app", 0, "cell-1"), batchItem("app", 1, "cell-1"), batchItem("app", 7, "cell-1"),
	}}).list(t, "results")
	if len(res) != 3 {
		t.Fatalf("%d results for 3 instances", len(res))
	}
	for i := range 2 {
		if a := res[i].obj(t, "actual_lrp"); a.str(t, "state") != "CLAIMED" || a.str(t, "cell_id") != "cell-1" {
			t.Fatalf("result %d = %v, want CLAIMED on cell-1", i, res[i])
		}
	}
	if e := res[2].obj(t, "error"); e.str(t, "type") != string(model.ErrResourceNotFound) {
		t.Fatalf("result for a missing index = %v, want ResourceNotFound", res[2])
	}

	res = h.ok("/v1/actual_lrps/start_batch", obj{"instances": []obj{batchItem("app", 0, "cell-1"), batchItem("app", 1, "cell-2")}}).list(t, "results")
	for i, cell := range []string{"cell-1", "cell-2"} {
		a := res[i].obj(t, "actual_lrp")
		if a.str(t, "state") != "RUNNING" || a.str(t, "cell_id") != cell || a.str(t, "address") != "10.0.0.9" {
			t.Fatalf("start %d = %v, want RUNNING on %s", i, a, cell)
		}
	}
	if got := h.ok("/v1/actual_lrps/claim_batch", obj{}).list(t, "results"); len(got) != 0 {
		t.Fatalf("an empty batch answered %v", got)
	}

	// errors_only: {} for each instance taken, the error for the others, the writes the same.
	h.desire(lrp("other", "d", 1, nil))
	res = h.ok("/v1/actual_lrps/claim_batch", obj{"errors_only": true, "instances": []obj{
		batchItem("other", 0, "cell-3"), batchItem("other", 5, "cell-3"),
	}}).list(t, "results")
	if len(res) != 2 || len(res[0]) != 0 {
		t.Fatalf("errors only: results %v, want {} then an error", res)
	}
	if e := res[1].obj(t, "error"); e.str(t, "type") != string(model.ErrResourceNotFound) {
		t.Fatalf("errors only: result for a missing index = %v, want ResourceNotFound", res[1])
	}
	if a := h.ok("/v1/actual_lrps/list", obj{"process_guid": "other"}).list(t, "actual_lrps")[0]; a.str(t, "state") != "CLAIMED" {
		t.Fatalf("errors only: the claim was not written: %v", a)
	}
}

// TestBatchRefusesBadInputWhole: one bad instance makes the whole batch an InvalidRequest,
// and nothing of it is written.
func TestBatchRefusesBadInputWhole(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("app", "d", 2, nil))
	noInstanceKey := batchItem("app", 1, "cell-1")
	delete(noInstanceKey, "actual_lrp_instance_key")
	noIndex := batchItem("app", 1, "cell-1")
	delete(noIndex["actual_lrp_key"].(obj), "index")
	withTag := batchItem("app", 1, "cell-1")
	withTag["modification_tag"] = obj{"epoch": "e", "index": 0}
	nulAddress := batchItem("app", 1, "cell-1")
	nulAddress["actual_lrp_net_info"] = obj{"address": "10.0.0.1\u0000"}
	tooMany := make([]obj, 1001)
	for i := range tooMany {
		tooMany[i] = batchItem("app", 0, "cell-1")
	}
	for name, body := range map[string]obj{
		"no instance key":  {"instances": []obj{batchItem("app", 0, "cell-1"), noInstanceKey}},
		"no index":         {"instances": []obj{batchItem("app", 0, "cell-1"), noIndex}},
		"modification tag": {"instances": []obj{batchItem("app", 0, "cell-1"), withTag}},
		"too many":         {"instances": tooMany},
		"NUL in address":   {"instances": []obj{batchItem("app", 0, "cell-1"), nulAddress}},
	} {
		for _, route := range []string{"/v1/actual_lrps/claim_batch", "/v1/actual_lrps/start_batch"} {
			requireError(t, h.postJSON(route, body), http.StatusBadRequest, model.ErrInvalidRequest)
			if n := h.count("actual_lrps WHERE state <> 'UNCLAIMED'"); n != 0 {
				t.Fatalf("%s %s: %d instances changed by a refused batch", route, name, n)
			}
		}
	}
	requireError(t, h.post("/v1/actual_lrps/claim_batch", `{"instances": [`), http.StatusBadRequest, model.ErrInvalidJSON)
	requireError(t, h.post("/v1/actual_lrps/start_batch", `{"instances": {}}`), http.StatusBadRequest, model.ErrInvalidRequest)
}
