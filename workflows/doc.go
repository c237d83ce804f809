// Package workflows holds the deterministic Temporal workflow code: the rollout workflow (one
// per process guid, its id model.RolloutWorkflowID) and the convergence loop. Workflows never
// import the db package; every side effect is an activity.
package workflows
