package cell

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// routes is the cell's own API (package cellapi): work from placement, stops from the BBS,
// drain from an operator, and its state for humans and tests.
func (a *Agent) routes() http.Handler {
	r := chi.NewRouter()
	r.Post(cellapi.WorkPath, a.handleWork)
	r.Post(cellapi.StopPath, a.handleStop)
	r.Post(cellapi.CancelTaskPath, a.handleCancelTask)
	r.Post(cellapi.EvacuatePath, func(w http.ResponseWriter, r *http.Request) {
		a.Drain()
		writeJSON(w, http.StatusOK, struct{}{})
	})
	r.Get(cellapi.StatePath, a.handleState)
	return r
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func badRequest(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": model.Errorf(model.ErrInvalidRequest, "%s", msg)})
}

// handleWork reserves a container for each piece of work that fits, claims it in the BBS,
// and runs it. A lost claim (another cell got there first) releases the reservation.
func (a *Agent) handleWork(w http.ResponseWriter, r *http.Request) {
	var req cellapi.PerformRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
		badRequest(w, "cannot decode work: "+err.Error())
		return
	}
	var resp cellapi.PerformResponse
	var accepted []executor.Container
	a.mu.Lock()
	left := a.Available()
	for _, work := range req.LRPs {
		reason := ""
		switch {
		case a.draining.Load():
			reason = "cell is evacuating"
		case left.Containers < 1 || left.MemoryMB < work.Definition.MemoryMB || left.DiskMB < work.Definition.DiskMB:
			reason = model.PlacementErrorInsufficientResources
		}
		if reason == "" {
			c, err := a.exec.Reserve(executor.RunSpec{Guid: uuid.NewString(), Key: work.Key, Definition: work.Definition})
			if err != nil {
				reason = err.Error()
			} else {
				accepted = append(accepted, c)
				left.Containers--
				left.MemoryMB -= c.MemoryMB
				left.DiskMB -= c.DiskMB
			}
		}
		if reason != "" {
			resp.Rejected = append(resp.Rejected, cellapi.Rejection{Key: work.Key, Reason: reason})
		}
	}
	reservedTasks, rejectedTasks := a.reserveTasks(req.Tasks, &left)
	resp.RejectedTasks = rejectedTasks
	a.mu.Unlock()
	a.startTasks(r.Context(), reservedTasks)

	// Claim them all in one batch, then run what was claimed.
	if len(accepted) > 0 {
		reports := make([]bbsclient.InstanceRequest, len(accepted))
		for i := range accepted {
			ik := a.instanceKey(&accepted[i])
			reports[i] = bbsclient.InstanceRequest{Key: accepted[i].Key, InstanceKey: &ik}
		}
		// On an error, results holds the answers of the requests that went through.
		results, err := a.bbs.ClaimActualLRPs(r.Context(), reports)
		for i := range accepted {
			c := &accepted[i]
			claimErr := err
			if i < len(results) {
				claimErr = results[i].Err()
			}
			if claimErr != nil {
				a.exec.Delete(c.Guid)
				resp.Rejected = append(resp.Rejected, cellapi.Rejection{Key: c.Key, Reason: "claim failed: " + claimErr.Error()})
				continue
			}
			if err := a.exec.Run(c.Guid); err != nil {
				a.log.Warn("run", zap.String("instance_guid", c.Guid), zap.Error(err))
			}
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// handleStop stops an instance; reconciliation then removes its record.
func (a *Agent) handleStop(w http.ResponseWriter, r *http.Request) {
	var req cellapi.StopRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		badRequest(w, "cannot decode stop: "+err.Error())
		return
	}
	guid := req.InstanceGUID
	if guid == "" {
		for _, c := range a.exec.Containers() {
			if sameSlot(c.Key, req.Key) {
				guid = c.Guid
			}
		}
	}
	if _, ok := a.exec.Get(guid); !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": model.Errorf(model.ErrResourceNotFound, "no container for %s/%d", req.Key.ProcessGUID, req.Key.Index)})
		return
	}
	a.stopAfterDrain(guid, req.Retiring)
	writeJSON(w, http.StatusOK, struct{}{})
}

// stopAfterDrain stops a container in the background. A RUNNING instance keeps serving for
// the drain time while routers deregister it; one not yet RUNNING serves nothing and stops at
// once (seed 000: a superseded instance that has not started is stopped, not left to start).
// A stop of a retiring instance is carried out only if it still is after the drain: a
// scale-up meanwhile may have withdrawn its retirement.
//
// One stop is pending per container: another request while it drains is folded into it. One
// from the BBS (a second retirement, after a walk back withdrew the first) makes the drain be
// served once more before the stop is claimed, so that routers told of the second retirement
// get their time too; a reconciliation's (missedStop, which cannot tell a pending stop from a
// missed one) does not.
func (a *Agent) stopAfterDrain(guid string, retiring bool) { a.stopAfter(guid, retiring, true) }

// stopAfter is stopAfterDrain; requested says the BBS asked.
func (a *Agent) stopAfter(guid string, retiring, requested bool) {
	c, _ := a.exec.Get(guid)
	drain := a.cfg.StopDrain
	if c.State != executor.StateRunning {
		drain = 0
	}
	p, first := a.pendStop(guid, requested)
	if !first {
		return
	}
	go func() {
		defer a.unpendStop(guid)
		if drain > 0 {
			time.Sleep(drain)
			if p.again.Swap(false) {
				time.Sleep(drain)
			}
			if retiring {
				stop, unanswered := a.claimStop(c)
				if !stop {
					a.log.Info("not stopping an instance whose retirement was withdrawn", zap.String("instance_guid", guid))
					return
				}
				if unanswered {
					// The BBS could not answer during the drain (its database restarting): the
					// routers, which learn of the retirement from the same store, may not have
					// either. They get a drain of their own from when it answers again (the
					// chaos matrix's PostgreSQL restart saw requests routed to an instance
					// stopped right after the restart).
					time.Sleep(drain)
				}
			}
		}
		if err := a.exec.Stop(guid); err != nil {
			a.log.Warn("stop", zap.String("instance_guid", guid), zap.Error(err))
		}
	}()
}

// pendingStop is a container draining to a stop; again says another request came meanwhile.
type pendingStop struct{ again atomic.Bool }

// pendStop returns guid's pending stop, first saying it is new (the caller carries it out);
// otherwise a request the BBS made is noted on it.
func (a *Agent) pendStop(guid string, requested bool) (p *pendingStop, first bool) {
	a.stopMu.Lock()
	defer a.stopMu.Unlock()
	if p = a.stops[guid]; p != nil {
		if requested {
			p.again.Store(true)
		}
		return p, false
	}
	if a.stops == nil {
		a.stops = map[string]*pendingStop{}
	}
	p = &pendingStop{}
	a.stops[guid] = p
	return p, true
}

// unpendStop forgets guid's pending stop, done.
func (a *Agent) unpendStop(guid string) {
	a.stopMu.Lock()
	defer a.stopMu.Unlock()
	delete(a.stops, guid)
}

func (a *Agent) handleState(w http.ResponseWriter, r *http.Request) {
	containers := a.exec.Containers()
	st := cellapi.State{
		CellID: a.cfg.ID, Zone: a.cfg.Zone, Evacuating: a.draining.Load(), Capacity: a.cfg.Capacity,
		Available: a.Available(), Containers: make([]cellapi.Container, len(containers)),
	}
	for i, c := range containers {
		st.Containers[i] = wireContainer(c)
	}
	writeJSON(w, http.StatusOK, st)
}

// wireContainer is c as the cell's API reports it.
func wireContainer(c executor.Container) cellapi.Container {
	return cellapi.Container{
		InstanceGUID: c.Guid, Key: c.Key, State: string(c.State), MemoryMB: c.MemoryMB, DiskMB: c.DiskMB,
		Address: c.Address, Ports: c.Ports, Since: c.Since,
		Result: cellapi.ContainerResult{Failed: c.Result.Failed, FailureReason: c.Result.FailureReason, Stopped: c.Result.Stopped},
	}
}

// claimStop claims the stop of the retiring instance container c holds, its drain over
// (db.Store.ClaimStop): stop is false when the retirement was withdrawn (a scale-up, or a walk
// back to its definition) — or when the BBS could not be asked for withdrawnPatience, after
// which the instance is kept rather than stopped unclaimed: a stop the BBS did not claim may
// be of an instance it has taken back into service, whose index would then stand empty, while
// a kept one is asked to stop again by convergence. unanswered says the BBS failed to answer
// at first (its database restarting, the replica asked dying).
func (a *Agent) claimStop(c executor.Container) (stop, unanswered bool) {
	ctx, cancel := context.WithTimeout(context.Background(), withdrawnPatience)
	defer cancel()
	ik := model.ActualLRPInstanceKey{InstanceGUID: c.Guid, CellID: a.cfg.ID}
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		stop, err := a.bbs.ClaimStop(ctx, c.Key, ik)
		if err == nil {
			return stop, unanswered
		}
		if model.IsType(err, model.ErrResourceNotFound) {
			// A BBS of the version before has no claims ("no route": a rolling upgrade, BBS
			// first as a rule): it is asked whether the retirement still holds, as it was then.
			// (A BBS with claims never answers ResourceNotFound to one.)
			if lrp, rerr := a.readSlot(ctx, c.Key); rerr == nil {
				return lrp == nil || lrp.InstanceGUID != c.Guid || lrp.CellID != a.cfg.ID || lrp.Retiring, unanswered
			}
		}
		unanswered = true
		select {
		case <-ctx.Done():
			a.log.Warn("cannot claim the stop of a retiring instance; keeping it until it is asked again", zap.String("instance_guid", c.Guid), zap.Error(err))
			return false, true
		case <-time.After(wait):
		}
	}
}

// withdrawnPatience bounds how long a cell asks whether a retirement was withdrawn.
const withdrawnPatience = 30 * time.Second
