package protocol

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// The translation of our event log into BBS's events. The log records, in the transaction of
// each change, what changed: an instance created or removed (the instance), changed (before
// and after) or crashed (after, and the incarnation that crashed), and desired-LRP changes.
// That is all BBS's rules need (its event calculator, bbs events/calculator; BBS-PROTOCOL.md
// §1.2), applied event by event:
//
//	created                                     → actual_lrp_instance_created
//	removed                                     → actual_lrp_instance_removed
//	changed to CLAIMED, RUNNING or CRASHED       → actual_lrp_instance_changed
//	changed from UNCLAIMED to UNCLAIMED         → actual_lrp_instance_changed (a failed placement)
//	changed to UNCLAIMED from any other state   → actual_lrp_instance_created (after), then
//	                                              actual_lrp_instance_removed (before): the
//	                                              incarnation is gone, a new one waits
//	crashed                                     → actual_lrp_crashed
//
// A crash writes its crashed event and then the instance's change (or its removal, when the
// LRP no longer wants it) in one transaction, so a crash to CRASHED reads actual_lrp_crashed +
// instance_changed, and one straight back to UNCLAIMED (the first crashes restart at once)
// actual_lrp_crashed + created + removed, in BBS's order (crash first). The deprecated group
// stream follows BBS's group rules with each instance in its own group (ToActualLRPGroup).
// trace_id stays empty: the log does not record the request that caused a change.

// bbsEvent is one event of a BBS stream.
type bbsEvent struct {
	name string
	msg  proto.Message
	// cells are the cells of the instance before and after the change (either may be
	// empty): a stream for one cell passes the event if either is that cell.
	cells [2]string
	// desired marks a desired-LRP event, which every stream passes whatever its cell.
	desired bool
}

// passes reports whether the event goes to a stream for cell ("": all cells).
func (e *bbsEvent) passes(cell string) bool {
	return cell == "" || e.desired || e.cells[0] == cell || e.cells[1] == cell
}

// BBS's event names (bbs models/events.go) for the instance events: the log's names for
// created, changed and removed are BBS's own; its crash event is named apart.
const (
	eventInstanceCreated = "actual_lrp_instance_created"
	eventInstanceChanged = "actual_lrp_instance_changed"
	eventInstanceRemoved = "actual_lrp_instance_removed"
	eventCrashed         = "actual_lrp_crashed"
	eventGroupCreated    = "actual_lrp_created"
	eventGroupChanged    = "actual_lrp_changed"
	eventGroupRemoved    = "actual_lrp_removed"
)

// translateInstanceEvent is the lrp_instances.r1 stream's translation of e.
func (s *Server) translateInstanceEvent(ctx context.Context, e model.Event) ([]bbsEvent, error) {
	switch e.Name {
	case model.EventActualLRPCreated:
		a, err := decodeEvent[model.ActualLRP](e)
		return []bbsEvent{instanceCreated(&a)}, err
	case model.EventActualLRPRemoved:
		a, err := decodeEvent[model.ActualLRP](e)
		return []bbsEvent{instanceRemoved(&a)}, err
	case model.EventActualLRPCrashed:
		c, err := decodeEvent[model.Crash](e)
		return []bbsEvent{crashedEvent(&c)}, err
	case model.EventActualLRPChanged:
		c, err := decodeEvent[model.Change[model.ActualLRP]](e)
		if err != nil {
			return nil, err
		}
		before, after := &c.Before, &c.After
		if after.State == model.StateUnclaimed && before.State != model.StateUnclaimed {
			return []bbsEvent{instanceCreated(after), instanceRemoved(before)}, nil
		}
		return []bbsEvent{{
			name: eventInstanceChanged,
			msg: &pb.ActualLRPInstanceChangedEvent{
				ActualLrpKey:         actualLRPKey(&after.ActualLRPKey),
				ActualLrpInstanceKey: instanceKey(changedInstanceKey(before, after)),
				Before:               actualLRPInfo(before),
				After:                actualLRPInfo(after),
			},
			cells: [2]string{before.CellID, after.CellID},
		}}, nil
	}
	return s.translateDesiredEvent(ctx, e)
}

// translateGroupEvent is the deprecated events.r1 stream's translation of e (BBS's
// generateLRPInstanceGroupEvents, each instance in the group its presence puts it in).
func (s *Server) translateGroupEvent(ctx context.Context, e model.Event) ([]bbsEvent, error) {
	switch e.Name {
	case model.EventActualLRPCreated:
		a, err := decodeEvent[model.ActualLRP](e)
		return []bbsEvent{groupCreated(&a)}, err
	case model.EventActualLRPRemoved:
		a, err := decodeEvent[model.ActualLRP](e)
		return []bbsEvent{groupRemoved(&a)}, err
	case model.EventActualLRPCrashed:
		c, err := decodeEvent[model.Crash](e)
		return []bbsEvent{crashedEvent(&c)}, err
	case model.EventActualLRPChanged:
		c, err := decodeEvent[model.Change[model.ActualLRP]](e)
		if err != nil {
			return nil, err
		}
		before, after := &c.Before, &c.After
		// A CLAIMED or RUNNING instance under another instance key than the one before
		// (BBS: an ordinary instance that replaced a suspect) is a new incarnation.
		if (after.State == model.StateClaimed || after.State == model.StateRunning) &&
			before.ActualLRPInstanceKey != (model.ActualLRPInstanceKey{}) && after.ActualLRPInstanceKey != before.ActualLRPInstanceKey {
			return []bbsEvent{groupCreated(after), groupRemoved(before)}, nil
		}
		return []bbsEvent{{
			name:  eventGroupChanged,
			msg:   &pb.ActualLRPChangedEvent{Before: singleGroup(before), After: singleGroup(after)},
			cells: [2]string{before.CellID, after.CellID},
		}}, nil
	}
	return s.translateDesiredEvent(ctx, e)
}

// translateDesiredEvent passes a desired-LRP event to the hook (Deps.DesiredLRPEvents); the
// log's other events (rollouts, pruning markers) are not BBS's.
func (s *Server) translateDesiredEvent(ctx context.Context, e model.Event) ([]bbsEvent, error) {
	switch e.Name {
	case model.EventDesiredLRPCreated, model.EventDesiredLRPChanged, model.EventDesiredLRPRemoved:
	default:
		return nil, nil
	}
	msg, err := s.streams.desired(ctx, e)
	if err != nil || msg == nil {
		return nil, err
	}
	return []bbsEvent{{name: e.Name, msg: msg, desired: true}}, nil
}

func decodeEvent[T any](e model.Event) (T, error) {
	var v T
	if err := json.Unmarshal(e.Data, &v); err != nil {
		return v, fmt.Errorf("decode %s event %d: %w", e.Name, e.ID, err)
	}
	return v, nil
}

func instanceCreated(a *model.ActualLRP) bbsEvent {
	return bbsEvent{name: eventInstanceCreated, msg: &pb.ActualLRPInstanceCreatedEvent{ActualLrp: actualLRP(a)},
		cells: [2]string{a.CellID}}
}

func instanceRemoved(a *model.ActualLRP) bbsEvent {
	return bbsEvent{name: eventInstanceRemoved, msg: &pb.ActualLRPInstanceRemovedEvent{ActualLrp: actualLRP(a)},
		cells: [2]string{a.CellID}}
}

func groupCreated(a *model.ActualLRP) bbsEvent {
	return bbsEvent{name: eventGroupCreated, msg: &pb.ActualLRPCreatedEvent{ActualLrpGroup: singleGroup(a)},
		cells: [2]string{a.CellID}}
}

func groupRemoved(a *model.ActualLRP) bbsEvent {
	return bbsEvent{name: eventGroupRemoved, msg: &pb.ActualLRPRemovedEvent{ActualLrpGroup: singleGroup(a)},
		cells: [2]string{a.CellID}}
}

// crashedEvent is BBS's crash report: the slot, the incarnation that crashed (its instance
// key and cell, which the crash cleared), and the crash count, reason and time after it.
func crashedEvent(c *model.Crash) bbsEvent {
	return bbsEvent{
		name: eventCrashed,
		msg: &pb.ActualLRPCrashedEvent{
			ActualLrpKey:         actualLRPKey(&c.ActualLRPKey),
			ActualLrpInstanceKey: instanceKey(&c.Before.ActualLRPInstanceKey),
			CrashCount:           c.CrashCount,
			CrashReason:          c.CrashReason,
			Since:                c.Since,
		},
		cells: [2]string{c.Before.CellID},
	}
}

// changedInstanceKey is the instance key a changed event names: the one after the change, or
// the one before when the change cleared it (BBS's NewActualLRPInstanceChangedEvent).
func changedInstanceKey(before, after *model.ActualLRP) *model.ActualLRPInstanceKey {
	if after.ActualLRPInstanceKey != (model.ActualLRPInstanceKey{}) {
		return &after.ActualLRPInstanceKey
	}
	return &before.ActualLRPInstanceKey
}
