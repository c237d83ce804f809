package db

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// LRPDeploymentByProcessGUID returns the LRP with every live definition (seed 000).
func (s *Store) LRPDeploymentByProcessGUID(ctx context.Context, guid string) (*model.LRPDeployment, error) {
	deps, err := s.LRPDeployments(ctx, model.DesiredLRPFilter{ProcessGUIDs: []string{guid}})
	if err != nil {
		return nil, err
	}
	if len(deps) == 0 {
		return nil, notFound("LRP deployment", guid)
	}
	return &deps[0], nil
}

// LRPDeployments lists the matching LRPs with their live definitions, ordered by process guid.
func (s *Store) LRPDeployments(ctx context.Context, f model.DesiredLRPFilter) ([]model.LRPDeployment, error) {
	var rows []struct {
		desiredWithDefinition
		Traffic           jsonText `db:"traffic"`
		TrafficGeneration int64    `db:"traffic_generation"`
	}
	err := s.db.SelectContext(ctx, &rows, planPerCall+`SELECT `+desiredColumns+`, l.traffic, l.traffic_generation, `+definitionAsDef+`
FROM desired_lrps l
JOIN lrp_definitions d ON d.process_guid = l.process_guid AND d.live`+
		filterClause+` ORDER BY l.process_guid, d.created_at, d.definition_id`, filterArgs(f)...)
	if err != nil {
		return nil, mapError(err)
	}
	var out []model.LRPDeployment
	for i := range rows {
		r := &rows[i]
		if len(out) == 0 || out[len(out)-1].ProcessGUID != r.ProcessGUID {
			routes, _, err := r.routesAndTags()
			if err != nil {
				return nil, err
			}
			strategy, err := decodeStrategy(r.RolloutStrategy)
			if err != nil {
				return nil, err
			}
			weights, err := decodeWeights(r.Traffic)
			if err != nil {
				return nil, err
			}
			out = append(out, model.LRPDeployment{
				ProcessGUID:         r.ProcessGUID,
				Domain:              r.Domain,
				Instances:           r.Instances,
				Routes:              routes,
				Annotation:          r.Annotation,
				ModificationTag:     r.tag(),
				Definitions:         map[string]model.LRPDefinition{},
				ActiveDefinitionID:  r.ActiveDefinitionID,
				HealthyDefinitionID: r.HealthyDefinitionID.String,
				RolloutStrategy:     strategy,
			})
			if r.TrafficGeneration > 0 {
				out[len(out)-1].Traffic = &model.TrafficSplit{ProcessGUID: r.ProcessGUID, Generation: r.TrafficGeneration, Weights: weights}
			}
		}
		def, err := r.Def.model()
		if err != nil {
			return nil, err
		}
		out[len(out)-1].Definitions[def.DefinitionID] = def
	}
	if out == nil {
		out = []model.LRPDeployment{}
	}
	return out, nil
}
