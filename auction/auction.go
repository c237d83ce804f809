package auction

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"

	"github.com/updatable-lrps/bbs/model"
)

// Weights of the score, as in BBS's auctioneer (ARCHITECTURE.md, "Facts from BBS worth
// keeping"): starting containers cost a quarter of a full cell, because a cell busy starting
// containers starts the next one slowly; a second instance of the same process on a cell
// costs more than any resource difference, so colocation only happens when nothing else fits.
const (
	startingWeight = 0.25
	localityWeight = 1000
)

// Cell is one cell as the auction sees it: its zone, capacity, tags and what it already holds.
type Cell struct {
	ID            string
	Zone          string
	Capacity      model.CellCapacity
	PlacementTags []string
	// Instances are instances the cell already holds, one by one; they count toward its
	// usage and toward the spread of their LRP. Only instances of the LRPs being placed
	// matter for the spread, so a caller may pass just those and sum the rest into Held.
	Instances []Instance
	// Held is what the cell holds besides Instances.
	Held Usage
}

// Usage is a sum of held instances: resources, containers, and how many are starting.
type Usage struct {
	MemoryMB, DiskMB     int64
	Containers, Starting int
}

// Instance is an LRP instance a cell already holds.
type Instance struct {
	ProcessGUID string
	MemoryMB    int32
	DiskMB      int32
	// Starting is true for an instance that is CLAIMED but not yet RUNNING; each such
	// instance adds 0.25 to the cell's score.
	Starting bool
}

// Work is one LRP instance, or one task, to start.
type Work struct {
	// Key names the instance; a task's is empty.
	Key model.ActualLRPKey
	// TaskGUID names the task, for a task. Tasks share the cells' resources with instances
	// and are scored alike, but are not spread: no task avoids a cell for holding another.
	TaskGUID      string
	MemoryMB      int32
	DiskMB        int32
	PlacementTags []string
}

// Placement says that a work item should start on the cell CellID.
type Placement struct {
	Work   Work
	CellID string
}

// Failure says that a work item could not be placed, and why; the reason is meant for
// ActualLRP.PlacementError.
type Failure struct {
	Work   Work
	Reason string
}

// Result is the outcome of a batch: every work item appears exactly once, in Placed or in
// Failed, each list in the order the items were considered (see the package doc).
type Result struct {
	Placed []Placement
	Failed []Failure
}

// cellState is a cell's usage as the batch goes on.
type cellState struct {
	id      string
	zone    int // position in the sorted zone list
	tagKey  string
	totMem  int64
	totDisk int64
	totCont int64
	mem     int64
	disk    int64
	cont    int64
	// starting counts CLAIMED instances, including those this batch placed.
	starting int
	// perGUID counts instances of each process guid on the cell, including this batch's.
	perGUID map[string]int
}

// fits reports whether the cell has room for w.
func (c *cellState) fits(w *Work) bool {
	return c.totMem-c.mem >= int64(w.MemoryMB) &&
		c.totDisk-c.disk >= int64(w.DiskMB) &&
		c.totCont-c.cont >= 1
}

// score is the cell's score for w (lower is better), assuming w fits.
func (c *cellState) score(w *Work) float64 {
	resource := (fraction(c.mem+int64(w.MemoryMB), c.totMem) +
		fraction(c.disk+int64(w.DiskMB), c.totDisk) +
		fraction(c.cont+1, c.totCont)) / 3
	score := resource + startingWeight*float64(c.starting)
	if w.TaskGUID == "" {
		score += localityWeight * float64(c.perGUID[w.Key.ProcessGUID])
	}
	return score
}

// place records w on the cell: it uses resources and is a starting instance from now on.
func (c *cellState) place(w *Work) {
	c.mem += int64(w.MemoryMB)
	c.disk += int64(w.DiskMB)
	c.cont++
	c.starting++
	if w.TaskGUID == "" {
		c.perGUID[w.Key.ProcessGUID]++
	}
}

// fraction is used/total, with an empty dimension counted as free rather than dividing by
// zero (BBS would get NaN and the cell would silently never win).
func fraction(used, total int64) float64 {
	if total <= 0 {
		if used <= 0 {
			return 0
		}
		return 1
	}
	return float64(used) / float64(total)
}

// tagGroup is, for one set of placement tags, the matching cells of each zone.
type tagGroup struct {
	cellsByZone [][]*cellState // per zone, in cell id order
	zones       []int          // zones with at least one matching cell, in name order
}

// placer holds the state of one call to Place.
type placer struct {
	zones      []string
	cells      []*cellState // in cell id order
	zoneCounts map[string][]int
	groups     map[string]*tagGroup
	order      []int // scratch space for zone ordering
}

// Place decides where each work item starts, following the rules in the package doc. It does
// not modify cells or work.
func Place(cells []Cell, work []Work) Result {
	p := newPlacer(cells)

	items := make([]Work, len(work))
	copy(items, work)
	sort.SliceStable(items, func(i, j int) bool { return before(&items[i], &items[j]) })

	var res Result
	for i := range items {
		w := &items[i]
		cellID, reason := p.placeOne(w)
		if reason != "" {
			res.Failed = append(res.Failed, Failure{Work: *w, Reason: reason})
			continue
		}
		res.Placed = append(res.Placed, Placement{Work: *w, CellID: cellID})
	}
	return res
}

// before orders the batch: lower index, larger memory, then identifiers for determinism.
func before(a, b *Work) bool {
	if a.Key.Index != b.Key.Index {
		return a.Key.Index < b.Key.Index
	}
	if a.MemoryMB != b.MemoryMB {
		return a.MemoryMB > b.MemoryMB
	}
	if a.Key.ProcessGUID != b.Key.ProcessGUID {
		return a.Key.ProcessGUID < b.Key.ProcessGUID
	}
	if a.Key.DefinitionID != b.Key.DefinitionID {
		return a.Key.DefinitionID < b.Key.DefinitionID
	}
	if a.Key.Domain != b.Key.Domain {
		return a.Key.Domain < b.Key.Domain
	}
	if a.TaskGUID != b.TaskGUID {
		return a.TaskGUID < b.TaskGUID
	}
	return a.DiskMB > b.DiskMB
}

func newPlacer(cells []Cell) *placer {
	zoneSet := map[string]bool{}
	for i := range cells {
		zoneSet[cells[i].Zone] = true
	}
	zones := make([]string, 0, len(zoneSet))
	for z := range zoneSet {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	zoneIndex := make(map[string]int, len(zones))
	for i, z := range zones {
		zoneIndex[z] = i
	}

	p := &placer{
		zones:      zones,
		cells:      make([]*cellState, len(cells)),
		zoneCounts: map[string][]int{},
		groups:     map[string]*tagGroup{},
		order:      make([]int, 0, len(zones)),
	}
	for i := range cells {
		c := &cells[i]
		s := &cellState{
			id:       c.ID,
			zone:     zoneIndex[c.Zone],
			tagKey:   tagKey(c.PlacementTags),
			totMem:   int64(c.Capacity.MemoryMB),
			totDisk:  int64(c.Capacity.DiskMB),
			totCont:  int64(c.Capacity.Containers),
			perGUID:  map[string]int{},
			mem:      c.Held.MemoryMB,
			disk:     c.Held.DiskMB,
			cont:     int64(c.Held.Containers),
			starting: c.Held.Starting,
		}
		for _, in := range c.Instances {
			s.mem += int64(in.MemoryMB)
			s.disk += int64(in.DiskMB)
			s.cont++
			if in.Starting {
				s.starting++
			}
			s.perGUID[in.ProcessGUID]++
			p.zoneCount(in.ProcessGUID)[s.zone]++
		}
		p.cells[i] = s
	}
	// Scanning cells in id order makes the first of equally scored cells the one with the
	// smallest id, and makes the result independent of the order cells were given in. The
	// zone breaks ties between equal ids so that even duplicated ids are handled the same way.
	sort.SliceStable(p.cells, func(i, j int) bool {
		if p.cells[i].id != p.cells[j].id {
			return p.cells[i].id < p.cells[j].id
		}
		return p.cells[i].zone < p.cells[j].zone
	})
	return p
}

// zoneCount returns the per-zone instance counts of a process guid, creating them on first use.
func (p *placer) zoneCount(guid string) []int {
	zc, ok := p.zoneCounts[guid]
	if !ok {
		zc = make([]int, len(p.zones))
		p.zoneCounts[guid] = zc
	}
	return zc
}

// group returns the cells matching a set of placement tags, computing it once per set.
func (p *placer) group(tags []string) *tagGroup {
	key := tagKey(tags)
	if g, ok := p.groups[key]; ok {
		return g
	}
	g := &tagGroup{cellsByZone: make([][]*cellState, len(p.zones))}
	for _, c := range p.cells {
		if c.tagKey == key {
			g.cellsByZone[c.zone] = append(g.cellsByZone[c.zone], c)
		}
	}
	for z, cs := range g.cellsByZone {
		if len(cs) > 0 {
			g.zones = append(g.zones, z)
		}
	}
	p.groups[key] = g
	return g
}

// placeOne places w and returns its cell, or the reason it could not be placed.
func (p *placer) placeOne(w *Work) (cellID, reason string) {
	g := p.group(w.PlacementTags)
	if len(g.zones) == 0 {
		return "", tagMismatchReason(w.PlacementTags)
	}
	if w.TaskGUID != "" {
		return p.placeTask(w, g)
	}
	order := p.zoneOrder(w, g)
	if w.Key.Index > 1 {
		// Seed 003: a later instance goes to its preferred zone or waits for a later auction.
		order = order[:1]
	}
	for _, z := range order {
		if best := bestCell(g.cellsByZone[z], w); best != nil {
			best.place(w)
			p.zoneCount(w.Key.ProcessGUID)[z]++
			return best.id, ""
		}
	}
	if w.Key.Index > 1 {
		return "", model.PlacementErrorInsufficientResources + " in zone " + p.zones[order[0]]
	}
	return "", model.PlacementErrorInsufficientResources
}

// placeTask places a task on the best-scoring fitting cell of any zone: a task has no
// siblings to spread across zones.
func (p *placer) placeTask(w *Work, g *tagGroup) (cellID, reason string) {
	var best *cellState
	var bestScore float64
	for _, z := range g.zones {
		c := bestCell(g.cellsByZone[z], w)
		if c == nil {
			continue
		}
		if s := c.score(w); best == nil || s < bestScore {
			best, bestScore = c, s
		}
	}
	if best == nil {
		return "", model.PlacementErrorInsufficientResources
	}
	best.place(w)
	return best.id, ""
}

// zoneOrder returns the zones of g in the order w should try them: fewest instances of its
// process guid first, ties by distance from the seed-003 zone (f(guid) + index) % NZones. The
// first zone is w's preferred zone. The slice is reused by the next call.
func (p *placer) zoneOrder(w *Work, g *tagGroup) []int {
	n := len(p.zones)
	start := (int(zoneHash(w.Key.ProcessGUID)%uint32(n)) + int(w.Key.Index%int32(n)) + n) % n
	counts := p.zoneCount(w.Key.ProcessGUID)
	dist := func(z int) int { return (z - start + n) % n }

	order := append(p.order[:0], g.zones...)
	// Insertion sort: zones are few, and this avoids sort's allocation per work item.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0; j-- {
			a, b := order[j-1], order[j]
			if counts[a] < counts[b] || (counts[a] == counts[b] && dist(a) <= dist(b)) {
				break
			}
			order[j-1], order[j] = b, a
		}
	}
	p.order = order
	return order
}

// bestCell returns the fitting cell with the lowest score, the first (smallest id) on ties,
// or nil when none fits.
func bestCell(cells []*cellState, w *Work) *cellState {
	var best *cellState
	var bestScore float64
	for _, c := range cells {
		if !c.fits(w) {
			continue
		}
		if s := c.score(w); best == nil || s < bestScore {
			best, bestScore = c, s
		}
	}
	return best
}

// zoneHash is seed 003's deterministic f(ProcessGuid): the 32-bit FNV-1a hash, which is fixed
// by its specification, so preferred zones do not move between releases.
func zoneHash(guid string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(guid))
	return h.Sum32()
}

// tagKey canonicalizes a set of tags, so that order and duplicates do not matter.
func tagKey(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	s := append([]string(nil), tags...)
	sort.Strings(s)
	out := s[:1]
	for _, t := range s[1:] {
		if t != out[len(out)-1] {
			out = append(out, t)
		}
	}
	// Tags are validated non-empty strings; NUL cannot appear in them, so the join is unambiguous.
	return strings.Join(out, "\x00")
}

// tagMismatchReason words a tag mismatch like Diego's auctioneer does.
func tagMismatchReason(tags []string) string {
	key := tagKey(tags)
	if key == "" {
		return "found no compatible cell with no placement tags"
	}
	parts := strings.Split(key, "\x00")
	for i := range parts {
		parts[i] = strconv.Quote(parts[i])
	}
	if len(parts) == 1 {
		return "found no compatible cell with placement tag " + parts[0]
	}
	return fmt.Sprintf("found no compatible cell with placement tags %s and %s",
		strings.Join(parts[:len(parts)-1], ", "), parts[len(parts)-1])
}
