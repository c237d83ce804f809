package cell

import (
	"context"
	"errors"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// reconcileAll compares every container with the BBS, and every instance the BBS places on
// this cell with the containers (the "No Container" rows of seed 003's table).
func (a *Agent) reconcileAll(ctx context.Context) error {
	instances, tasks := splitTasks(a.exec.Containers())
	taskErr := a.reconcileTasks(ctx, tasks, true)
	mine, err := a.bbs.ActualLRPs(ctx, model.ActualLRPFilter{CellID: a.cfg.ID})
	if err != nil {
		return errors.Join(taskErr, err)
	}
	return errors.Join(taskErr, a.reconcilePairs(ctx, instances, mine, true))
}

// reconcileContainers compares the containers of guids, fresh from the executor, with the
// BBS: one container by its slot, several with one read of the cell's instances.
func (a *Agent) reconcileContainers(ctx context.Context, guids []string) error {
	var all []executor.Container
	seen := map[string]bool{}
	for _, g := range guids {
		if c, ok := a.exec.Get(g); ok && !seen[g] {
			seen[g] = true
			all = append(all, c)
		}
	}
	containers, tasks := splitTasks(all)
	if err := a.reconcileTasks(ctx, tasks, false); err != nil {
		return err
	}
	containers, err := a.startFresh(ctx, containers)
	if err != nil {
		return err
	}
	if containers, err = a.removeStopped(ctx, containers); err != nil {
		return err
	}
	switch len(containers) {
	case 0:
		return nil
	case 1:
		c := containers[0]
		lrp, err := a.readSlot(ctx, c.Key)
		if err != nil {
			return err
		}
		return a.applyDecision(ctx, &c, lrp, nil)
	}
	mine, err := a.bbs.ActualLRPs(ctx, model.ActualLRPFilter{CellID: a.cfg.ID})
	if err != nil {
		return err
	}
	return a.reconcilePairs(ctx, containers, mine, false)
}

// reconcilePairs applies Decide to each container and the instance it holds among mine (the
// cell's instances, read once), and, with noContainerRows, to each of mine no container holds
// (the table's "No Container" rows: only a pass over every container can tell). The starts
// it calls for are reported together, in one batch.
func (a *Agent) reconcilePairs(ctx context.Context, containers []executor.Container, mine []model.ActualLRP, noContainerRows bool) error {
	byGuid := map[string]*model.ActualLRP{}
	for i := range mine {
		if mine[i].Presence == model.PresenceOrdinary {
			byGuid[mine[i].InstanceGUID] = &mine[i]
		}
	}
	have := map[string]bool{}
	var starts []bbsclient.InstanceRequest
	var errs []error
	for i := range containers {
		c := &containers[i]
		have[c.Guid] = true
		lrp := byGuid[c.Guid]
		if lrp == nil || !sameSlot(lrp.ActualLRPKey, c.Key) {
			// Not (or no longer) held by this container: read the slot itself.
			var err error
			if lrp, err = a.readSlot(ctx, c.Key); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := a.applyDecision(ctx, c, lrp, &starts); err != nil {
			errs = append(errs, err)
		}
	}
	if noContainerRows {
		for _, lrp := range byGuid {
			if have[lrp.InstanceGUID] || a.draining.Load() {
				continue
			}
			// The containers were listed before the BBS was read: one created, started and
			// reported since is in the BBS's answer but not in the list. It is no "No
			// Container" row (unclaiming it took a RUNNING instance out of service, its
			// index empty after a rollout had retired the old one: found by 1,000
			// concurrent rollouts); its own reconciliation decides for it.
			if _, ok := a.exec.Get(lrp.InstanceGUID); ok {
				continue
			}
			if err := a.applyDecision(ctx, nil, lrp, nil); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(starts) > 0 {
		errs = append(errs, a.reportStarts(ctx, starts))
	}
	return errors.Join(errs...)
}

// startFresh reports the containers that have just come up RUNNING as started, in one
// batch, without reading their slots first, and returns the others with those whose start
// the store refused, for the read-and-decide path. For a RUNNING container Decide calls for
// a start in every case but two, and the store refuses or skips exactly those: the slot runs
// elsewhere (refused; read back, Decide deletes the container) or already runs here as
// reported (nothing written). So a fresh start costs one batched write, where reading the
// slot, or every instance of the cell, cost as much again as the start. A draining cell
// leaves RUNNING containers to the evacuation.
func (a *Agent) startFresh(ctx context.Context, containers []executor.Container) (rest []executor.Container, err error) {
	var starts []bbsclient.InstanceRequest
	byGuid := map[string]executor.Container{}
	for _, c := range containers {
		if c.State != executor.StateRunning || a.draining.Load() {
			rest = append(rest, c)
			continue
		}
		starts = append(starts, a.startRequest(&c))
		byGuid[c.Guid] = c
	}
	if len(starts) == 0 {
		return rest, nil
	}
	refused, err := a.sendStarts(ctx, starts)
	for _, r := range refused {
		rest = append(rest, byGuid[r.req.InstanceKey.InstanceGUID])
	}
	return rest, err
}

// removeStopped removes the instance records of the containers that completed because this
// cell stopped them (a retirement, a scale-down), without reading their slots first, deletes
// the containers, and returns the others. For such a container Decide removes the record
// when the slot holds this container's instance (CLAIMED or RUNNING here) and otherwise only
// deletes the container; the store's remove, given the instance key, takes exactly the first
// case and refuses (ActualLRPCannotBeRemoved) or does not find the others. So a stop costs
// one write, where reading the slot first cost as much again.
func (a *Agent) removeStopped(ctx context.Context, containers []executor.Container) (rest []executor.Container, err error) {
	var errs []error
	for _, c := range containers {
		if c.State != executor.StateCompleted || !c.Result.Stopped {
			rest = append(rest, c)
			continue
		}
		errs = append(errs, a.removeStoppedOne(ctx, c.Guid))
	}
	return rest, errors.Join(errs...)
}

// removeStoppedOne is removeStopped for one container, under the agent's lock, as
// applyDecision: a fresh read of the container first (another pass may have deleted it).
func (a *Agent) removeStoppedOne(ctx context.Context, guid string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.exec.Get(guid)
	if !ok || c.State != executor.StateCompleted || !c.Result.Stopped {
		return nil
	}
	return a.removeThenDelete(ctx, &c)
}

// removeThenDelete removes the record of the instance container c holds, if it still does
// (the instance key must match: a record gone or another instance's is left alone), then
// deletes the container. The agent's lock must be held.
func (a *Agent) removeThenDelete(ctx context.Context, c *executor.Container) error {
	ik := a.instanceKey(c)
	err := a.bbs.RemoveActualLRP(ctx, c.Key, &ik)
	if err != nil && !model.IsType(err, model.ErrResourceNotFound) && !model.IsType(err, model.ErrCannotBeRemoved) {
		return err
	}
	return a.exec.Delete(c.Guid)
}

// reportStarts tells the BBS, in one batch, that these instances run here.
func (a *Agent) reportStarts(ctx context.Context, starts []bbsclient.InstanceRequest) error {
	refused, err := a.sendStarts(ctx, starts)
	errs := []error{err}
	for _, r := range refused {
		// Someone else runs it now (ActualLRPCannotBeStarted): the next pass deletes the
		// container.
		if !model.IsType(r.err, model.ErrCannotBeStarted) {
			errs = append(errs, r.err)
		}
	}
	return errors.Join(errs...)
}

// refusedStart is a start the store did not take, and why.
type refusedStart struct {
	req bbsclient.InstanceRequest
	err error
}

// sendStarts reports starts in one batch and returns those the store refused. It holds the
// agent's lock, as a single start does, and reports only the containers that still run:
// another pass may have reported one crashed or stopped since it was queued.
func (a *Agent) sendStarts(ctx context.Context, starts []bbsclient.InstanceRequest) ([]refusedStart, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var live []bbsclient.InstanceRequest
	for _, s := range starts {
		if c, ok := a.exec.Get(s.InstanceKey.InstanceGUID); ok && c.State == executor.StateRunning {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		return nil, nil
	}
	results, err := a.bbs.StartActualLRPs(ctx, live)
	if err != nil {
		return nil, err
	}
	var refused []refusedStart
	for i, r := range results {
		if err := r.Err(); err != nil {
			refused = append(refused, refusedStart{req: live[i], err: err})
		}
	}
	return refused, nil
}

// startRequest is the report that c runs here: where, and whether it is ready.
func (a *Agent) startRequest(c *executor.Container) bbsclient.InstanceRequest {
	ik, net, routable := a.instanceKey(c), netInfo(c), !c.NotReady
	return bbsclient.InstanceRequest{Key: c.Key, InstanceKey: &ik, NetInfo: &net, Routable: &routable}
}

// readSlot reads the ordinary instance in the container's slot; nil when there is none.
func (a *Agent) readSlot(ctx context.Context, key model.ActualLRPKey) (*model.ActualLRP, error) {
	index := key.Index
	lrps, err := a.bbs.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: key.ProcessGUID, DefinitionID: key.DefinitionID, Index: &index})
	if err != nil {
		return nil, err
	}
	for i := range lrps {
		if lrps[i].Presence == model.PresenceOrdinary {
			return &lrps[i], nil
		}
	}
	return nil, nil
}

func sameSlot(a, b model.ActualLRPKey) bool {
	return a.ProcessGUID == b.ProcessGUID && a.DefinitionID == b.DefinitionID && a.Index == b.Index
}

// applyDecision asks Decide about one pair, against a fresh read of the container, and
// carries out its answer. While draining, RUNNING containers belong
// to the evacuation, which has its own rules. A start goes into starts, when given, for the
// caller to report with others.
func (a *Agent) applyDecision(ctx context.Context, c *executor.Container, lrp *model.ActualLRP, starts *[]bbsclient.InstanceRequest) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c != nil {
		fresh, ok := a.exec.Get(c.Guid)
		if !ok {
			return nil // deleted meanwhile
		}
		c = &fresh
		if a.draining.Load() && c.State != executor.StateCompleted {
			return nil
		}
	}
	if missedStop(c, lrp, a.cfg.ID) {
		a.log.Info("stopping an instance the BBS retired", zap.String("instance_guid", c.Guid))
		a.stopAfter(c.Guid, true, false)
		return nil
	}
	action := Decide(c, lrp, a.cfg.ID)
	if action == DoNothing {
		return nil
	}
	log := a.log.With(zap.Stringer("action", action))
	if c != nil {
		log = log.With(zap.String("process_guid", c.Key.ProcessGUID), zap.Int32("index", c.Key.Index), zap.String("instance_guid", c.Guid))
	}
	log.Debug("reconcile")
	switch action {
	case ClaimActualLRP:
		_, err := a.bbs.ClaimActualLRP(ctx, c.Key, a.instanceKey(c))
		return err
	case StartActualLRP:
		if starts != nil {
			*starts = append(*starts, a.startRequest(c))
			return nil
		}
		_, err := a.bbs.StartActualLRP(ctx, a.startRequest(c))
		if model.IsType(err, model.ErrCannotBeStarted) {
			// Someone else runs it now: the next pass deletes this container.
			return nil
		}
		return err
	case CrashThenDeleteContainer:
		_, err := a.bbs.CrashActualLRP(ctx, c.Key, a.instanceKey(c), c.Result.FailureReason)
		if err != nil && !model.IsType(err, model.ErrResourceNotFound) && !model.IsType(err, model.ErrCannotBeCrashed) {
			return err
		}
		log.Info("instance crashed", zap.String("reason", c.Result.FailureReason))
		return a.exec.Delete(c.Guid)
	case RemoveThenDeleteContainer:
		return a.removeThenDelete(ctx, c)
	case DeleteContainer:
		return a.exec.Delete(c.Guid)
	case UnclaimAndRequestStart:
		_, err := a.bbs.UnclaimActualLRP(ctx, lrp.ActualLRPKey, lrp.ActualLRPInstanceKey)
		if model.IsType(err, model.ErrInvalidStateTransition) || model.IsType(err, model.ErrResourceNotFound) {
			return nil
		}
		return err
	}
	return nil
}

func (a *Agent) instanceKey(c *executor.Container) model.ActualLRPInstanceKey {
	return model.ActualLRPInstanceKey{InstanceGUID: c.Guid, CellID: a.cfg.ID}
}

func netInfo(c *executor.Container) model.ActualLRPNetInfo {
	return model.ActualLRPNetInfo{Address: c.Address, Ports: c.Ports, InstanceAddress: c.Address}
}

// missedStop reports a container whose instance the BBS has retired (and so asked this cell
// to stop) but which still runs: the stop request never arrived — the cell was down when it
// was sent, and came back adopting the instance. The cell carries it out rather than leave
// the index with two instances until convergence sends the request again.
func missedStop(c *executor.Container, lrp *model.ActualLRP, cellID string) bool {
	return c != nil && lrp != nil && lrp.Retiring && lrp.CellID == cellID && lrp.InstanceGUID == c.Guid &&
		(c.State == executor.StateRunning || c.State == executor.StateCreated || c.State == executor.StateInitializing)
}
