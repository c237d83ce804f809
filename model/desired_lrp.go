package model

import "encoding/json"

// ModificationTag orders the changes of one record: Epoch is set when the record is created,
// Index grows by one with every change. Compare-and-swap writes name the tag they last saw.
type ModificationTag struct {
	Epoch string `json:"epoch"`
	Index uint32 `json:"index"`
}

// Routes maps a router's name to its opaque JSON configuration.
type Routes map[string]json.RawMessage

// DesiredLRP is an LRP seen through its active definition (seed 001's embedding): the
// projection of an LRPDeployment that BBS clients already know.
type DesiredLRP struct {
	ProcessGUID string                     `json:"process_guid"`
	Domain      string                     `json:"domain"`
	Instances   int32                      `json:"instances"`
	Routes      Routes                     `json:"routes,omitempty"`
	Annotation  string                     `json:"annotation,omitempty"`
	MetricTags  map[string]json.RawMessage `json:"metric_tags,omitempty"`
	// ModificationTag is assigned by the store; it is ignored in create requests.
	ModificationTag ModificationTag `json:"modification_tag"`
	LRPDefinition
	// PreviousDefinitionID is set only while a rollout is in progress.
	PreviousDefinitionID string `json:"previous_definition_id,omitempty"`
	// RolloutStrategy is the LRP's default strategy for its rollouts (ROLLOUTS-NEXT.md
	// section 1): an update's own strategy wins over it field by field, and it over the
	// server's.
	RolloutStrategy *RolloutStrategy `json:"rollout_strategy,omitempty"`
}

// Validate checks a DesiredLRP as submitted for creation. A missing definition id is
// allowed: the store promotes it to the process guid (seed 000).
func (d *DesiredLRP) Validate() error {
	if err := ValidateGUID("process_guid", d.ProcessGUID); err != nil {
		return err
	}
	if d.Domain == "" {
		return invalid("domain is required")
	}
	if len(d.Domain) > MaxGUIDLength {
		return invalid("domain is longer than %d characters", MaxGUIDLength)
	}
	if err := validateInstances(d.Instances); err != nil {
		return err
	}
	if err := validateAnnotation(d.Annotation); err != nil {
		return err
	}
	if err := d.Routes.Validate(); err != nil {
		return err
	}
	if err := validateMetricTags(d.MetricTags, d.MetricsGUID); err != nil {
		return err
	}
	if err := validateRolloutStrategy(d.RolloutStrategy); err != nil {
		return err
	}
	return d.LRPDefinition.Validate()
}

// Validate checks the total size of the routes and that each value is JSON. A value is
// measured as the API sends it back (compact, with <, >, &, U+2028 and U+2029 escaped), so
// that routes the API returns are routes it accepts.
func (r Routes) Validate() error {
	total := 0
	for name, v := range r {
		if name == "" {
			return invalid("routes must not have an empty router name")
		}
		if !json.Valid(v) {
			return invalid("routes[%q] is not valid JSON", name)
		}
		encoded, err := json.Marshal(v)
		if err != nil {
			return invalid("routes[%q] is not valid JSON", name)
		}
		total += len(name) + len(encoded)
	}
	if total > MaxRoutesBytes {
		return invalid("routes are %d bytes, more than the limit of %d", total, MaxRoutesBytes)
	}
	return nil
}

func validateInstances(n int32) error {
	if n < 0 || n > MaxInstances {
		return invalid("instances must be between 0 and %d", MaxInstances)
	}
	return nil
}

func validateAnnotation(a string) error {
	if len(a) > MaxAnnotationBytes {
		return invalid("annotation is %d bytes, more than the limit of %d", len(a), MaxAnnotationBytes)
	}
	return nil
}

// DesiredLRPUpdate changes what may change without restarting instances, and, with a
// Definition, starts a rolling update to it.
type DesiredLRPUpdate struct {
	Instances  *int32                      `json:"instances,omitempty"`
	Routes     *Routes                     `json:"routes,omitempty"`
	Annotation *string                     `json:"annotation,omitempty"`
	MetricTags *map[string]json.RawMessage `json:"metric_tags,omitempty"`
	Definition *LRPDefinition              `json:"definition,omitempty"`
	// Strategy is how the rollout to Definition walks; it needs a Definition.
	Strategy *RolloutStrategy `json:"strategy,omitempty"`
	// RolloutStrategy replaces the LRP's default strategy (alone, or beside a Definition,
	// whose rollout then resolves over it).
	RolloutStrategy *RolloutStrategy `json:"rollout_strategy,omitempty"`
	// ActiveDefinition, which only the BBS protocol sets, replaces the stored protobuf of the
	// LRP's active definition (BBS updates image credentials in place). It names the
	// definition it was made from: should another be active by then, the update is refused as
	// a conflict.
	ActiveDefinition *DefinitionProtobuf `json:"-"`
}

// DefinitionProtobuf is the protobuf of one definition of an LRP (LRPDefinition.Protobuf).
type DefinitionProtobuf struct {
	DefinitionID string
	Protobuf     []byte
}

// Validate checks each field that is present.
func (u *DesiredLRPUpdate) Validate() error {
	if u.Instances != nil {
		if err := validateInstances(*u.Instances); err != nil {
			return err
		}
	}
	if u.Annotation != nil {
		if err := validateAnnotation(*u.Annotation); err != nil {
			return err
		}
	}
	if u.Routes != nil {
		if err := u.Routes.Validate(); err != nil {
			return err
		}
	}
	if u.MetricTags != nil {
		if err := validateMetricTags(*u.MetricTags, ""); err != nil {
			return err
		}
	}
	if u.Definition != nil {
		if err := ValidateGUID("definition.definition_id", u.Definition.DefinitionID); err != nil {
			return err
		}
		if err := u.Definition.Validate(); err != nil {
			return err
		}
	}
	if u.Strategy != nil {
		if u.Definition == nil {
			return invalid("strategy applies to the rollout of a definition: give definition beside it (rollout_strategy sets the LRP's default)")
		}
		if err := u.Strategy.Validate(); err != nil {
			return err
		}
		if err := u.Strategy.Supported(); err != nil {
			return err
		}
	}
	return validateRolloutStrategy(u.RolloutStrategy)
}

// validateRolloutStrategy checks an LRP's default strategy, if one is given.
func validateRolloutStrategy(s *RolloutStrategy) error {
	if s == nil {
		return nil
	}
	if err := s.ValidateDefault(); err != nil {
		return err
	}
	return s.Supported()
}

// DesiredLRPSchedulingInfo is the part of a DesiredLRP the auctioneer and converger need: no
// run info.
type DesiredLRPSchedulingInfo struct {
	ProcessGUID          string          `json:"process_guid"`
	Domain               string          `json:"domain"`
	LogGUID              string          `json:"log_guid,omitempty"`
	Instances            int32           `json:"instances"`
	Routes               Routes          `json:"routes,omitempty"`
	Annotation           string          `json:"annotation,omitempty"`
	ModificationTag      ModificationTag `json:"modification_tag"`
	DefinitionID         string          `json:"definition_id"`
	PreviousDefinitionID string          `json:"previous_definition_id,omitempty"`
	HealthyDefinitionID  string          `json:"healthy_definition_id,omitempty"`
	RootFS               string          `json:"rootfs"`
	MemoryMB             int32           `json:"memory_mb"`
	DiskMB               int32           `json:"disk_mb"`
	MaxPids              int32           `json:"max_pids,omitempty"`
	PlacementTags        []string        `json:"placement_tags,omitempty"`
	// VolumeDrivers are the drivers of the definition's volume mounts: a cell must offer
	// them to run an instance.
	VolumeDrivers []string `json:"volume_drivers,omitempty"`
}

// DesiredLRPFilter narrows a list of DesiredLRPs or LRPDeployments; empty fields match all.
type DesiredLRPFilter struct {
	Domain       string   `json:"domain,omitempty"`
	ProcessGUIDs []string `json:"process_guids,omitempty"`
	// AppGUIDs match the process guids that start with any of them (Cloud Controller's
	// process guids are "<app guid>-<version>").
	AppGUIDs []string `json:"app_guids,omitempty"`
}

// Validate checks the guids named by the filter (app guids are prefixes: any string).
func (f *DesiredLRPFilter) Validate() error {
	for _, g := range f.ProcessGUIDs {
		if err := ValidateGUID("process_guids[]", g); err != nil {
			return err
		}
	}
	return nil
}
