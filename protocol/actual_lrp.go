package protocol

import (
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
)

// The ActualLRP conversion: our instance as BBS describes it, field by field what Cloud
// Controller (key.index, state, since, placement_error, instance_guid, net info, routable),
// route-emitter (net info with TLS proxy ports, preferred address, routable, internal routes)
// and cfdot read (BBS-PROTOCOL.md §3, §4.2 point 5).
//
// The keys, the net info and the modification tag are always set, even empty: BBS's gogo
// models never leave them out, and Cloud Controller reads actual_lrp_key.index without a nil
// check. routable always has a value too, false included: Cloud Controller takes an absent
// one for true.

// actualLRP is a as BBS describes it.
func actualLRP(a *model.ActualLRP) *pb.ActualLRP {
	routable := a.Routable()
	return &pb.ActualLRP{
		ActualLrpKey:         actualLRPKey(&a.ActualLRPKey),
		ActualLrpInstanceKey: instanceKey(&a.ActualLRPInstanceKey),
		ActualLrpNetInfo:     netInfo(&a.ActualLRPNetInfo),
		CrashCount:           a.CrashCount,
		CrashReason:          a.CrashReason,
		State:                a.State,
		PlacementError:       a.PlacementError,
		Since:                a.Since,
		ModificationTag:      modificationTag(a.ModificationTag),
		Presence:             presence(a.Presence),
		// What a Diego cell reports at start (model.ActualLRP.InternalRoutes).
		ActualLrpInternalRoutes: internalRoutes(a.InternalRoutes),
		MetricTags:              a.MetricTags,
		Routable:                &routable,
		AvailabilityZone:        a.AvailabilityZone,
	}
}

// internalRoutes is the instance's internal route hostnames as BBS's messages.
func internalRoutes(hostnames []string) []*pb.ActualLRPInternalRoute {
	if len(hostnames) == 0 {
		return nil
	}
	out := make([]*pb.ActualLRPInternalRoute, len(hostnames))
	for i, h := range hostnames {
		out[i] = &pb.ActualLRPInternalRoute{Hostname: h}
	}
	return out
}

// actualLRPInfo is a without its keys, for the before and after of a changed event (which
// in BBS carries neither internal routes nor metric tags).
func actualLRPInfo(a *model.ActualLRP) *pb.ActualLRPInfo {
	routable := a.Routable()
	return &pb.ActualLRPInfo{
		ActualLrpNetInfo: netInfo(&a.ActualLRPNetInfo),
		CrashCount:       a.CrashCount,
		CrashReason:      a.CrashReason,
		State:            a.State,
		PlacementError:   a.PlacementError,
		Since:            a.Since,
		ModificationTag:  modificationTag(a.ModificationTag),
		Presence:         presence(a.Presence),
		Routable:         &routable,
		AvailabilityZone: a.AvailabilityZone,
	}
}

// actualLRPKey is k with its definition id at field 1000, which stock clients skip.
func actualLRPKey(k *model.ActualLRPKey) *pb.ActualLRPKey {
	return &pb.ActualLRPKey{ProcessGuid: k.ProcessGUID, Index: k.Index, Domain: k.Domain, DefinitionId: k.DefinitionID}
}

func instanceKey(k *model.ActualLRPInstanceKey) *pb.ActualLRPInstanceKey {
	return &pb.ActualLRPInstanceKey{InstanceGuid: k.InstanceGUID, CellId: k.CellID}
}

func netInfo(n *model.ActualLRPNetInfo) *pb.ActualLRPNetInfo {
	out := &pb.ActualLRPNetInfo{
		Address:          n.Address,
		InstanceAddress:  n.InstanceAddress,
		PreferredAddress: preferredAddress(n.PreferredAddress),
	}
	if len(n.Ports) > 0 {
		out.Ports = make([]*pb.PortMapping, len(n.Ports))
		for i, p := range n.Ports {
			out.Ports[i] = &pb.PortMapping{
				ContainerPort:         p.ContainerPort,
				HostPort:              p.HostPort,
				ContainerTlsProxyPort: p.ContainerTLSProxyPort,
				HostTlsProxyPort:      p.HostTLSProxyPort,
			}
		}
	}
	return out
}

func modificationTag(t model.ModificationTag) *pb.ModificationTag {
	return &pb.ModificationTag{Epoch: t.Epoch, Index: t.Index}
}

func presence(p string) pb.ActualLRP_Presence {
	switch p {
	case model.PresenceEvacuating:
		return pb.ActualLRP_EVACUATING
	case model.PresenceSuspect:
		return pb.ActualLRP_SUSPECT
	}
	return pb.ActualLRP_ORDINARY
}

func preferredAddress(p string) pb.ActualLRPNetInfo_PreferredAddress {
	switch p {
	case model.PreferredAddressInstance:
		return pb.ActualLRPNetInfo_INSTANCE
	case model.PreferredAddressHost:
		return pb.ActualLRPNetInfo_HOST
	}
	return pb.ActualLRPNetInfo_UNKNOWN
}

// actualLRPGroup is g as BBS's deprecated group: the index's ordinary (or suspect) instance
// and its evacuating one.
func actualLRPGroup(g *model.ActualLRPGroup) *pb.ActualLRPGroup {
	out := &pb.ActualLRPGroup{}
	if g.Instance != nil {
		out.Instance = actualLRP(g.Instance)
	}
	if g.Evacuating != nil {
		out.Evacuating = actualLRP(g.Evacuating)
	}
	return out
}

// singleGroup is a alone in a group, in the slot its presence gives it (BBS's
// ToActualLRPGroup), for the deprecated group events.
func singleGroup(a *model.ActualLRP) *pb.ActualLRPGroup {
	if a.Presence == model.PresenceEvacuating {
		return &pb.ActualLRPGroup{Evacuating: actualLRP(a)}
	}
	return &pb.ActualLRPGroup{Instance: actualLRP(a)}
}
