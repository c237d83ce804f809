package api

import "github.com/updatable-lrps/bbs/lrps"

// Rollouts starts and steers the rollout workflows (one per LRP).
type Rollouts = lrps.Rollouts

// WithRollouts lets the server start rollouts; without it the rollout routes answer
// Unavailable. Call it before serving.
func (s *Server) WithRollouts(r Rollouts) *Server {
	s.lrps.SetRollouts(r)
	return s
}
