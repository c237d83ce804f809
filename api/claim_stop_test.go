package api_test

import (
	"net/http"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// A cell claims the stop of a retiring instance it holds: stop true, and from then on the
// retirement stays; an instance not retiring (its retirement withdrawn) answers stop false.
// A request without the instance key is refused, changing nothing.
func TestClaimStop(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("app", "d", 2, nil))
	h.ok("/v1/actual_lrps/claim_batch", obj{"instances": []obj{batchItem("app", 0, "cell-1"), batchItem("app", 1, "cell-1")}})
	h.ok("/v1/actual_lrps/start_batch", obj{"instances": []obj{batchItem("app", 0, "cell-1"), batchItem("app", 1, "cell-1")}})
	h.exec(`UPDATE actual_lrps SET retiring = true WHERE instance_index = 0`)
	claim := func(index int) obj {
		item := batchItem("app", index, "cell-1")
		return h.ok("/v1/actual_lrps/claim_stop", obj{"actual_lrp_key": item["actual_lrp_key"], "actual_lrp_instance_key": item["actual_lrp_instance_key"]})
	}
	if stop, _ := claim(0)["stop"].(bool); !stop {
		t.Fatal("a retiring instance's stop was not claimed")
	}
	if stop, _ := claim(1)["stop"].(bool); stop {
		t.Fatal("an instance not retiring was to be stopped")
	}
	var claimed int
	if err := h.store.DB().Get(&claimed, `SELECT count(*) FROM actual_lrps WHERE stop_claimed`); err != nil || claimed != 1 {
		t.Fatalf("%d stops claimed (%v), want 1", claimed, err)
	}
	requireError(t, h.post("/v1/actual_lrps/claim_stop", `{"actual_lrp_key": {"process_guid": "app", "index": 1}}`),
		http.StatusBadRequest, model.ErrInvalidRequest)
}
