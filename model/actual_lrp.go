package model

// ActualLRP states (seed 002).
const (
	StateUnclaimed = "UNCLAIMED"
	StateClaimed   = "CLAIMED"
	StateRunning   = "RUNNING"
	StateCrashed   = "CRASHED"
)

// ActualLRP presences: an ORDINARY instance, one moving off a draining cell (EVACUATING), or
// one on a cell that vanished (SUSPECT) while its replacement is placed.
const (
	PresenceOrdinary   = "ORDINARY"
	PresenceEvacuating = "EVACUATING"
	PresenceSuspect    = "SUSPECT"
)

// PlacementErrorInsufficientResources is the placement error when no cell can fit an instance.
const PlacementErrorInsufficientResources = "insufficient resources"

// ActualLRPKey names an instance slot: an index of one definition of an LRP.
type ActualLRPKey struct {
	ProcessGUID  string `json:"process_guid"`
	DefinitionID string `json:"definition_id,omitempty"`
	Index        int32  `json:"index"`
	Domain       string `json:"domain"`
}

// ActualLRPInstanceKey names the cell and the container running an instance.
type ActualLRPInstanceKey struct {
	InstanceGUID string `json:"instance_guid,omitempty"`
	CellID       string `json:"cell_id,omitempty"`
}

// PortMapping maps a container port to the host port that reaches it, and, when the cell
// runs a TLS proxy in front of the port (BBS's rep does; our cells do not yet), the proxy's
// port inside the container and on the host.
type PortMapping struct {
	ContainerPort         uint32 `json:"container_port"`
	HostPort              uint32 `json:"host_port"`
	ContainerTLSProxyPort uint32 `json:"container_tls_proxy_port,omitempty"`
	HostTLSProxyPort      uint32 `json:"host_tls_proxy_port,omitempty"`
}

// Preferred addresses of an instance: which of its net info's addresses routers should use.
// Empty is BBS's UNKNOWN (the router decides).
const (
	PreferredAddressInstance = "INSTANCE"
	PreferredAddressHost     = "HOST"
)

// ActualLRPNetInfo is where a running instance can be reached.
type ActualLRPNetInfo struct {
	Address         string        `json:"address,omitempty"`
	Ports           []PortMapping `json:"ports,omitempty"`
	InstanceAddress string        `json:"instance_address,omitempty"`
	// PreferredAddress is "", PreferredAddressInstance or PreferredAddressHost, as the cell
	// reports it.
	PreferredAddress string `json:"preferred_address,omitempty"`
}

// ActualLRP is one instance of an LRP as the store knows it.
type ActualLRP struct {
	ActualLRPKey
	ActualLRPInstanceKey
	ActualLRPNetInfo
	State           string          `json:"state"`
	PlacementError  string          `json:"placement_error,omitempty"`
	Since           int64           `json:"since"`
	CrashCount      int32           `json:"crash_count"`
	CrashReason     string          `json:"crash_reason,omitempty"`
	Presence        string          `json:"presence"`
	ModificationTag ModificationTag `json:"modification_tag"`
	// AvailabilityZone is the zone of the instance's cell, recorded when the cell claims or
	// starts it (and cleared with its cell): clients read it without knowing the cells.
	AvailabilityZone string `json:"availability_zone,omitempty"`
	// Retiring is set once the instance has been handed to its cell to stop for good (a
	// rollout replacing it, a scale-down, a retire): routers deregister it at once, and the
	// cell stops it only after a drain time, so that no request reaches a stopping instance.
	Retiring bool `json:"retiring,omitempty"`
	// InternalRoutes and MetricTags are what a Diego cell reports when it starts the
	// instance: the hostnames of the LRP's "internal-router" route and its metric tags with
	// INDEX and INSTANCE_GUID filled in, taken when the instance last became RUNNING.
	InternalRoutes []string          `json:"internal_routes,omitempty"`
	MetricTags     map[string]string `json:"metric_tags,omitempty"`
	// NotReady is set while a RUNNING instance's readiness checks do not pass, as its cell
	// reports (BBS's routable = false); cleared when they pass and whenever the instance
	// leaves RUNNING.
	NotReady bool `json:"not_ready,omitempty"`
}

// Routable reports whether routers may send the instance traffic: it is RUNNING, its
// readiness checks (if its definition has any) pass, and it is not being retired (a retiring
// instance is deregistered before its cell stops it).
func (a *ActualLRP) Routable() bool {
	return a.State == StateRunning && !a.NotReady && !a.Retiring
}

// AllowsTransitionTo reports whether BBS's state machine lets the instance move to state
// `to` when asked with instance key `ik`: the asking cell's key for CLAIMED, RUNNING and
// CRASHED, the empty key for UNCLAIMED (which, like CRASHED, carries no instance key).
func (a *ActualLRP) AllowsTransitionTo(ik ActualLRPInstanceKey, to string) bool {
	same := a.ActualLRPInstanceKey == ik
	cleared := ik == ActualLRPInstanceKey{}
	switch a.State {
	case StateUnclaimed:
		return to == StateUnclaimed || to == StateClaimed || to == StateRunning
	case StateClaimed:
		switch to {
		case StateUnclaimed:
			return cleared
		case StateRunning:
			return true
		case StateClaimed, StateCrashed:
			return same
		}
	case StateRunning:
		switch to {
		case StateUnclaimed:
			return cleared
		case StateClaimed, StateRunning, StateCrashed:
			return same
		}
	case StateCrashed:
		switch to {
		case StateUnclaimed:
			return cleared
		case StateClaimed, StateRunning:
			return same
		}
	}
	return false
}

// ActualLRPGroup is the instances of one (process guid, definition id, index): the ordinary
// (or suspect) one and the evacuating one.
type ActualLRPGroup struct {
	Instance   *ActualLRP `json:"instance,omitempty"`
	Evacuating *ActualLRP `json:"evacuating,omitempty"`
}

// ActualLRPFilter narrows a list of ActualLRPs; empty fields match all.
type ActualLRPFilter struct {
	Domain       string `json:"domain,omitempty"`
	CellID       string `json:"cell_id,omitempty"`
	ProcessGUID  string `json:"process_guid,omitempty"`
	Index        *int32 `json:"index,omitempty"`
	DefinitionID string `json:"definition_id,omitempty"`
}

// Validate checks the identifiers named by the filter.
func (f *ActualLRPFilter) Validate() error {
	if f.ProcessGUID != "" {
		if err := ValidateGUID("process_guid", f.ProcessGUID); err != nil {
			return err
		}
	}
	if f.DefinitionID != "" {
		if err := ValidateGUID("definition_id", f.DefinitionID); err != nil {
			return err
		}
	}
	if f.Index != nil && *f.Index < 0 {
		return invalid("index must be >= 0")
	}
	if f.Index != nil && f.ProcessGUID == "" {
		return invalid("index filters need a process_guid")
	}
	return nil
}

// GroupActualLRPs folds instances into one group per (process guid, definition id, index),
// keeping the input's order of first appearance. A SUSPECT instance stands in as the group's
// instance when there is no ORDINARY one, or the ORDINARY one is not yet RUNNING (BBS does
// the same, so clients keep routing to the suspect while its replacement starts).
func GroupActualLRPs(lrps []ActualLRP) []ActualLRPGroup {
	type slot struct {
		guid, def string
		index     int32
	}
	pos := map[slot]int{}
	var groups []ActualLRPGroup
	for i := range lrps {
		a := &lrps[i]
		k := slot{a.ProcessGUID, a.DefinitionID, a.Index}
		p, ok := pos[k]
		if !ok {
			p = len(groups)
			pos[k] = p
			groups = append(groups, ActualLRPGroup{})
		}
		g := &groups[p]
		switch a.Presence {
		case PresenceEvacuating:
			g.Evacuating = a
		case PresenceSuspect:
			if g.Instance == nil || g.Instance.State != StateRunning {
				g.Instance = a
			}
		default:
			if g.Instance == nil || g.Instance.Presence != PresenceSuspect || a.State == StateRunning {
				g.Instance = a
			}
		}
	}
	return groups
}

// EachActualLRPGroup yields one group (GroupActualLRPs) per (process guid, definition id,
// index) of the instances each walks, in the store's order, as they come: the store lists the
// instances of a slot next to each other, so each group is complete when the next slot
// begins, and a list of the fleet's groups holds one slot in memory, not the fleet. Both
// APIs stream their lists of groups through it, so that they group alike.
func EachActualLRPGroup(each func(fn func(*ActualLRP) error) error, yield func(*ActualLRPGroup) error) error {
	var slot []ActualLRP
	flush := func() error {
		if len(slot) == 0 {
			return nil
		}
		for _, g := range GroupActualLRPs(slot) {
			if err := yield(&g); err != nil {
				return err
			}
		}
		slot = nil
		return nil
	}
	err := each(func(a *ActualLRP) error {
		if len(slot) > 0 && (slot[0].ProcessGUID != a.ProcessGUID || slot[0].DefinitionID != a.DefinitionID || slot[0].Index != a.Index) {
			if err := flush(); err != nil {
				return err
			}
		}
		slot = append(slot, *a)
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}
