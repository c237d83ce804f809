package model

// LRPDeployment is an LRP seen with all its definitions (seed 000). DesiredLRP is its
// projection through ActiveDefinitionID.
type LRPDeployment struct {
	ProcessGUID         string                   `json:"process_guid"`
	Domain              string                   `json:"domain"`
	Instances           int32                    `json:"instances"`
	Routes              Routes                   `json:"routes,omitempty"`
	Annotation          string                   `json:"annotation,omitempty"`
	ModificationTag     ModificationTag          `json:"modification_tag"`
	Definitions         map[string]LRPDefinition `json:"definitions"`
	ActiveDefinitionID  string                   `json:"active_definition_id"`
	HealthyDefinitionID string                   `json:"healthy_definition_id"`
	// RolloutStrategy is the LRP's default rollout strategy (DesiredLRP.RolloutStrategy).
	RolloutStrategy *RolloutStrategy `json:"rollout_strategy,omitempty"`
	// Traffic is how its routes split requests between its definitions (ROLLOUTS-NEXT.md
	// section 5), nil for an LRP whose split never changed (by instances): routers read it
	// with the LRP and follow its traffic_changed events.
	Traffic *TrafficSplit `json:"traffic,omitempty"`
}

// LRPDeploymentCreate is the CreateLRPDeployment request of seed 000.
type LRPDeploymentCreate struct {
	ProcessGUID  string         `json:"process_guid"`
	Domain       string         `json:"domain"`
	Instances    int32          `json:"instances"`
	Routes       Routes         `json:"routes,omitempty"`
	Annotation   string         `json:"annotation,omitempty"`
	DefinitionID string         `json:"definition_id"`
	Definition   *LRPDefinition `json:"definition"`
	// RolloutStrategy is the LRP's default rollout strategy.
	RolloutStrategy *RolloutStrategy `json:"rollout_strategy,omitempty"`
}

// DesiredLRP converts the request to the DesiredLRP it creates, checking that the definition id
// given beside the definition agrees with any id inside it.
func (c *LRPDeploymentCreate) DesiredLRP() (*DesiredLRP, error) {
	if err := ValidateGUID("definition_id", c.DefinitionID); err != nil {
		return nil, err
	}
	if c.Definition == nil {
		return nil, invalid("definition is required")
	}
	def := *c.Definition
	if def.DefinitionID != "" && def.DefinitionID != c.DefinitionID {
		return nil, invalid("definition.definition_id %q differs from definition_id %q", def.DefinitionID, c.DefinitionID)
	}
	def.DefinitionID = c.DefinitionID
	d := &DesiredLRP{
		ProcessGUID:     c.ProcessGUID,
		Domain:          c.Domain,
		Instances:       c.Instances,
		Routes:          c.Routes,
		Annotation:      c.Annotation,
		LRPDefinition:   def,
		RolloutStrategy: c.RolloutStrategy,
	}
	return d, d.Validate()
}

// LRPDeploymentUpdate is the UpdateLRPDeployment request of seed 000.
type LRPDeploymentUpdate struct {
	Instances    *int32         `json:"instances,omitempty"`
	Routes       *Routes        `json:"routes,omitempty"`
	Annotation   *string        `json:"annotation,omitempty"`
	DefinitionID *string        `json:"definition_id,omitempty"`
	Definition   *LRPDefinition `json:"definition,omitempty"`
}

// DesiredLRPUpdate converts the request to the equivalent DesiredLRPUpdate; the definition and
// its id must come together (seed 000).
func (u *LRPDeploymentUpdate) DesiredLRPUpdate() (*DesiredLRPUpdate, error) {
	if (u.DefinitionID == nil) != (u.Definition == nil) {
		return nil, invalid("definition_id and definition must be given together")
	}
	out := &DesiredLRPUpdate{Instances: u.Instances, Routes: u.Routes, Annotation: u.Annotation}
	if u.Definition != nil {
		def := *u.Definition
		if def.DefinitionID != "" && def.DefinitionID != *u.DefinitionID {
			return nil, invalid("definition.definition_id %q differs from definition_id %q", def.DefinitionID, *u.DefinitionID)
		}
		def.DefinitionID = *u.DefinitionID
		out.Definition = &def
	}
	return out, out.Validate()
}
