package protocol

import (
	"context"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
)

// LRPDeploymentStore is what the LRP deployment routes read of the store directly.
type LRPDeploymentStore interface {
	LRPDeploymentByProcessGUID(ctx context.Context, guid string) (*model.LRPDeployment, error)
	LRPDeployments(ctx context.Context, f model.DesiredLRPFilter) ([]model.LRPDeployment, error)
}

// The LRPDeployment operations of seed 000, on the paths of the JSON API's
// /v1/lrp_deployments/...: a deployment is a desired LRP seen with all its definitions, so it
// is created, changed and deleted through the same store and lrps.Service calls.

// createLRPDeployment creates an LRP with one definition, which becomes active.
func (s *Server) createLRPDeployment(ctx context.Context, req *pb.CreateLRPDeploymentRequest) (*pb.LRPDeploymentLifecycleResponse, error) {
	c := req.GetLrpDeploymentDefinition()
	if c == nil {
		return nil, invalidFields("lrp_deployment_definition")
	}
	create := model.LRPDeploymentCreate{
		ProcessGUID:  c.GetProcessGuid(),
		Domain:       c.GetDomain(),
		Instances:    c.GetInstances(),
		Routes:       routesToModel(c.GetRoutes()),
		Annotation:   c.GetAnnotation(),
		DefinitionID: c.GetDefinitionId(),
		// Checked by DesiredLRP's Validate, as the JSON API's.
		RolloutStrategy: strategyToModel(c.GetRolloutStrategy()),
	}
	if def := c.GetDefinition(); def != nil {
		dropLRPFields(def)
		if err := validateDefinition(def); err != nil {
			return nil, err
		}
		m := definitionToModel(def)
		create.Definition = &m
	}
	d, err := create.DesiredLRP()
	if err != nil {
		return nil, err
	}
	_, err = s.store.DesireLRP(ctx, d)
	return &pb.LRPDeploymentLifecycleResponse{}, err
}

// updateLRPDeployment changes what the update carries; a definition (with its id) starts a
// rolling update to it, superseding one under way (seed 000).
func (s *Server) updateLRPDeployment(ctx context.Context, req *pb.UpdateLRPDeploymentRequest) (*pb.LRPDeploymentLifecycleResponse, error) {
	if err := validateProcessGUID(req.GetProcessGuid()); err != nil {
		return nil, err
	}
	pu := req.GetUpdate()
	if pu == nil {
		pu = &pb.LRPDeploymentUpdate{}
	}
	mu := model.LRPDeploymentUpdate{Instances: pu.Instances, Annotation: pu.Annotation, DefinitionID: pu.DefinitionId}
	if pu.GetRoutes() != nil {
		r := routesToModel(pu.GetRoutes())
		if r == nil {
			r = model.Routes{}
		}
		mu.Routes = &r
	}
	if def := pu.GetDefinition(); def != nil {
		dropLRPFields(def)
		if err := validateDefinition(def); err != nil {
			return nil, err
		}
		m := definitionToModel(def)
		mu.Definition = &m
	}
	u, err := mu.DesiredLRPUpdate()
	if err != nil {
		return nil, err
	}
	// The strategies sit beside the update, as in the JSON API's request, and are checked the
	// same way.
	u.Strategy, u.RolloutStrategy = strategyToModel(req.GetStrategy()), strategyToModel(req.GetRolloutStrategy())
	if err := u.Validate(); err != nil {
		return nil, err
	}
	_, err = s.lrps.Update(ctx, req.GetProcessGuid(), u, true)
	return &pb.LRPDeploymentLifecycleResponse{}, err
}

// activateLRPDeployment walks the LRP to a definition of its map (seed 000), as the request's
// strategy says.
func (s *Server) activateLRPDeployment(ctx context.Context, req *pb.ActivateLRPDeploymentDefinitionRequest) (*pb.LRPDeploymentLifecycleResponse, error) {
	if err := validateRollout(req.GetProcessGuid(), req.GetDefinitionId()); err != nil {
		return nil, err
	}
	strategy, err := requestStrategy(req.GetStrategy())
	if err != nil {
		return nil, err
	}
	_, err = s.lrps.StartRollout(ctx, rolloutTo(req.GetProcessGuid(), req.GetDefinitionId(), model.RolloutKindActivate, true, strategy))
	return &pb.LRPDeploymentLifecycleResponse{}, err
}

func (s *Server) deleteLRPDeployment(ctx context.Context, req *pb.DeleteLRPDeploymentRequest) (*pb.LRPDeploymentLifecycleResponse, error) {
	if err := validateProcessGUID(req.GetProcessGuid()); err != nil {
		return nil, err
	}
	return &pb.LRPDeploymentLifecycleResponse{}, s.lrps.Remove(ctx, req.GetProcessGuid())
}

func (s *Server) lrpDeploymentByProcessGUID(ctx context.Context, req *pb.LRPDeploymentByProcessGuidRequest) (*pb.LRPDeploymentResponse, error) {
	if err := validateProcessGUID(req.GetProcessGuid()); err != nil {
		return nil, err
	}
	m, err := s.store.LRPDeploymentByProcessGUID(ctx, req.GetProcessGuid())
	if err != nil {
		return nil, err
	}
	dep, err := lrpDeploymentFromModel(m)
	if err != nil {
		return nil, err
	}
	return &pb.LRPDeploymentResponse{LrpDeployment: dep}, nil
}

func (s *Server) lrpDeployments(ctx context.Context, req *pb.LRPDeploymentsRequest) (*pb.LRPDeploymentsResponse, error) {
	ms, err := s.store.LRPDeployments(ctx, model.DesiredLRPFilter{Domain: req.GetDomain(), ProcessGUIDs: req.GetProcessGuids()})
	if err != nil {
		return nil, err
	}
	resp := &pb.LRPDeploymentsResponse{LrpDeployments: make([]*pb.LRPDeployment, len(ms))}
	for i := range ms {
		if resp.LrpDeployments[i], err = lrpDeploymentFromModel(&ms[i]); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

func lrpDeploymentFromModel(m *model.LRPDeployment) (*pb.LRPDeployment, error) {
	dep := &pb.LRPDeployment{
		ProcessGuid:         m.ProcessGUID,
		Domain:              m.Domain,
		Instances:           m.Instances,
		Routes:              routesFromModel(m.Routes),
		Annotation:          m.Annotation,
		ModificationTag:     tagFromModel(m.ModificationTag),
		Definitions:         make(map[string]*pb.LRPDefinition, len(m.Definitions)),
		ActiveDefinitionId:  m.ActiveDefinitionID,
		HealthyDefinitionId: m.HealthyDefinitionID,
		RolloutStrategy:     strategyFromModel(m.RolloutStrategy),
	}
	for id, d := range m.Definitions {
		def, err := definitionFromModel(&d)
		if err != nil {
			return nil, err
		}
		dep.Definitions[id] = def
	}
	return dep, nil
}

// validateRollout checks a request that names a definition of an LRP to walk to.
func validateRollout(guid, definitionID string) error {
	var e fieldErrors
	if guid == "" {
		e.field("process_guid")
	}
	if definitionID == "" {
		e.field("definition_id")
	}
	return e.err()
}

// rolloutTo asks for a walk of guid's instances to a definition it has (a rollback, or an
// activation), as strategy (nil: none) says.
func rolloutTo(guid, definitionID, kind string, supersede bool, strategy *model.RolloutStrategy) db.RolloutRequest {
	return db.RolloutRequest{ProcessGUID: guid, Kind: kind, DefinitionID: definitionID, Supersede: supersede, Strategy: strategy}
}
