package router

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"

	"github.com/updatable-lrps/bbs/model"
)

// Traffic by definition weight (ROLLOUTS-NEXT.md section 5). While a rollout holds a
// weighted step, its LRP's split says what share of the requests each definition takes,
// whatever its instance count; requests then go round-robin over that definition's
// instances. The table derives, per host and LRP, the definitions' groups of endpoints and
// their effective weights, so that a request costs one random draw.

// defGroup is one definition's routable endpoints of a host.
type defGroup struct {
	def string
	eps []Endpoint
	// weight is the group's effective share: a listed definition's weight, or the share of
	// what the listed ones leave that its instances make among the unlisted; listed says it
	// was listed (a listed 0 is never chosen without a preview header).
	weight float64
	listed bool
	// cookie is the Set-Cookie header that keeps a user on def (built once, not per answer).
	cookie []string
}

// lrpSplit is one LRP's weighted split of a host.
type lrpSplit struct {
	guid   string
	groups []defGroup
	// total is the sum of the groups' effective weights.
	total float64
}

// newSplit derives an LRP's groups for one host from its endpoints there and its weights.
func newSplit(guid string, eps []Endpoint, weights map[string]int32) *lrpSplit {
	s := &lrpSplit{guid: guid}
	byDef := map[string]int{}
	for _, ep := range eps {
		i, ok := byDef[ep.DefinitionID]
		if !ok {
			i = len(s.groups)
			byDef[ep.DefinitionID] = i
			w, listed := weights[ep.DefinitionID]
			s.groups = append(s.groups, defGroup{def: ep.DefinitionID, weight: float64(w), listed: listed,
				cookie: []string{(&http.Cookie{Name: StickyCookie, Value: ep.DefinitionID, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode}).String()}})
		}
		s.groups[i].eps = append(s.groups[i].eps, ep)
	}
	// The unlisted definitions share the rest by instances.
	rest := 100.0
	for _, w := range weights {
		rest -= float64(w)
	}
	unlisted := 0
	for _, g := range s.groups {
		if !g.listed {
			unlisted += len(g.eps)
		}
	}
	for i := range s.groups {
		g := &s.groups[i]
		if !g.listed && rest > 0 {
			g.weight = rest * float64(len(g.eps)) / float64(unlisted)
		}
		s.total += g.weight
	}
	slices.SortFunc(s.groups, func(a, b defGroup) int { return strings.Compare(a.def, b.def) })
	return s
}

// group is the routable group of def, or nil.
func (s *lrpSplit) group(def string) *defGroup {
	for i := range s.groups {
		if s.groups[i].def == def {
			return &s.groups[i]
		}
	}
	return nil
}

// pick chooses the definition group a request goes to: the sticky definition while it has
// weight, else one drawn by weight. Without any group of positive weight — the weighted
// definitions have nothing routable — the unlisted definitions serve by instances; a
// definition listed at 0 never does. nil: nothing may serve.
func (s *lrpSplit) pick(sticky string) *defGroup {
	if g := s.group(sticky); g != nil && g.weight > 0 {
		return g
	}
	if s.total > 0 {
		x := rand.Float64() * s.total
		for i := range s.groups {
			if g := &s.groups[i]; g.weight > 0 {
				if x < g.weight {
					return g
				}
				x -= g.weight
			}
		}
		// Rounding left x at the total: the last group of positive weight.
		for i := len(s.groups) - 1; i >= 0; i-- {
			if s.groups[i].weight > 0 {
				return &s.groups[i]
			}
		}
	}
	for i := range s.groups {
		if !s.groups[i].listed {
			return &s.groups[i]
		}
	}
	return nil
}

// candidates are the first k endpoints a request to group g tries in turn: g's, round-robin
// from next, then those of the other groups that may serve, for a retry after a failed
// connection.
func (s *lrpSplit) candidates(g *defGroup, next uint64, k int) []Endpoint {
	out := make([]Endpoint, 0, k)
	out = appendRotated(out, g.eps, next, k)
	for i := range s.groups {
		if o := &s.groups[i]; o != g && (o.weight > 0 || (!o.listed && g.weight == 0)) {
			out = appendRotated(out, o.eps, next, k)
		}
	}
	return out
}

// rotated is eps starting at next modulo their number (round-robin).
func rotated(eps []Endpoint, next uint64) []Endpoint {
	return appendRotated(nil, eps, next, len(eps))
}

// appendRotated appends eps, round-robin from next, to out until out holds k.
func appendRotated(out, eps []Endpoint, next uint64, k int) []Endpoint {
	if len(eps) == 0 {
		return out
	}
	start := int(next % uint64(len(eps)))
	for i := 0; i < len(eps) && len(out) < k; i++ {
		out = append(out, eps[(start+i)%len(eps)])
	}
	return out
}

// weightsOf is the split an LRP is routed by, or nil when by instances.
func weightsOf(s model.TrafficSplit) map[string]int32 {
	if !s.Weighted() {
		return nil
	}
	return s.Weights
}
