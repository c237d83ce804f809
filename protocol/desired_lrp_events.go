package protocol

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// desiredLRPEvent is the streams' translation of the log's desired-LRP events (the
// DesiredLRPEvents hook, events.go): BBS's DesiredLRPCreatedEvent, DesiredLRPChangedEvent or
// DesiredLRPRemovedEvent, with V3 DesiredLRPs as both r1 streams carry them, each built as
// get_by_process_guid.r3 builds it — the definition's protobuf and the route values as the
// event recorded them (model.DesiredLRPEvent) — except that BBS's events are not PopulateMetricsGuid'd. We have
// no request ids: trace_id stays empty.
func desiredLRPEvent(_ context.Context, e model.Event) (proto.Message, error) {
	switch e.Name {
	case model.EventDesiredLRPCreated:
		d, err := eventDesiredLRP(e)
		if err != nil {
			return nil, err
		}
		return &pb.DesiredLRPCreatedEvent{DesiredLrp: d}, nil
	case model.EventDesiredLRPRemoved:
		d, err := eventDesiredLRP(e)
		if err != nil {
			return nil, err
		}
		return &pb.DesiredLRPRemovedEvent{DesiredLrp: d}, nil
	case model.EventDesiredLRPChanged:
		c, err := decodeEvent[model.Change[model.DesiredLRPEvent]](e)
		if err != nil {
			return nil, err
		}
		before, err := fromEvent(c.Before)
		if err != nil {
			return nil, err
		}
		after, err := fromEvent(c.After)
		if err != nil {
			return nil, err
		}
		return &pb.DesiredLRPChangedEvent{Before: before, After: after}, nil
	}
	return nil, nil
}

func eventDesiredLRP(e model.Event) (*pb.DesiredLRP, error) {
	d, err := decodeEvent[model.DesiredLRPEvent](e)
	if err != nil {
		return nil, err
	}
	return fromEvent(d)
}

func fromEvent(d model.DesiredLRPEvent) (*pb.DesiredLRP, error) { return desiredFromModel(d.Model()) }
