package auction

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// bigCap is room for far more than any test places, so only the score decides.
var bigCap = model.CellCapacity{MemoryMB: 64 * 1024, DiskMB: 256 * 1024, Containers: 250}

func work(guid string, index int32, memMB, diskMB int32, tags ...string) Work {
	return Work{
		Key:           model.ActualLRPKey{ProcessGUID: guid, DefinitionID: "d1", Index: index, Domain: "dom"},
		MemoryMB:      memMB,
		DiskMB:        diskMB,
		PlacementTags: tags,
	}
}

func instances(guid string, n int) []Work {
	ws := make([]Work, n)
	for i := range ws {
		ws[i] = work(guid, int32(i), 256, 512)
	}
	return ws
}

// cellOf maps each placed work item (by guid and index) to its cell.
func cellOf(r Result) map[string]string {
	m := map[string]string{}
	for _, p := range r.Placed {
		m[fmt.Sprintf("%s/%d", p.Work.Key.ProcessGUID, p.Work.Key.Index)] = p.CellID
	}
	return m
}

func TestScore(t *testing.T) {
	tests := []struct {
		name string
		cell Cell
		work Work
		want float64
	}{
		{
			// (1024/4096 + 2048/8192 + 1/256) / 3 = (0.25 + 0.25 + 0.00390625) / 3.
			name: "empty cell",
			cell: Cell{ID: "c", Capacity: model.CellCapacity{MemoryMB: 4096, DiskMB: 8192, Containers: 256}},
			work: work("w", 0, 1024, 2048),
			want: 0.16796875,
		},
		{
			// Used after placing: memory 500/1000, disk 1000/2000, containers 3/10, so
			// (0.5 + 0.5 + 0.3) / 3 = 0.4333…, plus 0.25 for the one starting instance.
			name: "running and starting instances of other processes",
			cell: Cell{ID: "c", Capacity: model.CellCapacity{MemoryMB: 1000, DiskMB: 2000, Containers: 10},
				Instances: []Instance{
					{ProcessGUID: "other", MemoryMB: 200, DiskMB: 400},
					{ProcessGUID: "x", MemoryMB: 100, DiskMB: 100, Starting: true},
				}},
			work: work("w", 0, 200, 500),
			want: 1.3/3 + 0.25,
		},
		{
			// As above, but the starting instance is of the same process: + 1000.
			name: "same process already on the cell",
			cell: Cell{ID: "c", Capacity: model.CellCapacity{MemoryMB: 1000, DiskMB: 2000, Containers: 10},
				Instances: []Instance{
					{ProcessGUID: "other", MemoryMB: 200, DiskMB: 400},
					{ProcessGUID: "w", MemoryMB: 100, DiskMB: 100, Starting: true},
				}},
			work: work("w", 0, 200, 500),
			want: 1.3/3 + 0.25 + 1000,
		},
		{
			// Two running instances of the process: 2 × 1000, no starting weight.
			// Memory 800/1000, disk 800/1000, containers 3/4: (0.8 + 0.8 + 0.75) / 3.
			name: "two running instances of the same process",
			cell: Cell{ID: "c", Capacity: model.CellCapacity{MemoryMB: 1000, DiskMB: 1000, Containers: 4},
				Instances: []Instance{
					{ProcessGUID: "w", MemoryMB: 300, DiskMB: 300},
					{ProcessGUID: "w", MemoryMB: 300, DiskMB: 300},
				}},
			work: work("w", 0, 200, 200),
			want: 2.35/3 + 2000,
		},
		{
			// A cell declaring no disk takes diskless work, its disk counting as free:
			// (512/1024 + 0 + 1/2) / 3.
			name: "zero disk capacity and diskless work",
			cell: Cell{ID: "c", Capacity: model.CellCapacity{MemoryMB: 1024, Containers: 2}},
			work: work("w", 0, 512, 0),
			want: 1.0 / 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlacer([]Cell{tt.cell})
			c := p.cells[0]
			if !c.fits(&tt.work) {
				t.Fatalf("cell does not fit the work")
			}
			if got := c.score(&tt.work); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("score = %.10f, want %.10f", got, tt.want)
			}
		})
	}
}

func TestFullness(t *testing.T) {
	capacity := model.CellCapacity{MemoryMB: 1024, DiskMB: 2048, Containers: 2}
	tests := []struct {
		name      string
		instances []Instance
		work      Work
		wantPlace bool
	}{
		{"exactly fits", nil, work("w", 0, 1024, 2048), true},
		{"memory", []Instance{{ProcessGUID: "o", MemoryMB: 512}}, work("w", 0, 513, 1), false},
		{"memory exactly left", []Instance{{ProcessGUID: "o", MemoryMB: 512}}, work("w", 0, 512, 1), true},
		{"disk", []Instance{{ProcessGUID: "o", DiskMB: 2000}}, work("w", 0, 1, 49), false},
		{"containers", []Instance{{ProcessGUID: "o"}, {ProcessGUID: "o"}}, work("w", 0, 1, 1), false},
		{"over-committed cell", []Instance{{ProcessGUID: "o", MemoryMB: 2048}}, work("w", 0, 0, 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := []Cell{{ID: "c", Zone: "z", Capacity: capacity, Instances: tt.instances}}
			r := Place(cells, []Work{tt.work})
			if tt.wantPlace {
				if len(r.Placed) != 1 || r.Placed[0].CellID != "c" {
					t.Fatalf("want placed on c, got %+v", r)
				}
				return
			}
			if len(r.Failed) != 1 || r.Failed[0].Reason != model.PlacementErrorInsufficientResources {
				t.Fatalf("want one failure %q, got %+v", model.PlacementErrorInsufficientResources, r)
			}
		})
	}
}

// TestBatchFillsCell checks that a batch counts its own placements: a cell with room for two
// containers takes two of three items, and the third fails.
func TestBatchFillsCell(t *testing.T) {
	cells := []Cell{{ID: "c", Zone: "z", Capacity: model.CellCapacity{MemoryMB: 1000, DiskMB: 1000, Containers: 2}}}
	r := Place(cells, []Work{work("a", 0, 10, 10), work("b", 0, 10, 10), work("c", 0, 10, 10)})
	if len(r.Placed) != 2 || len(r.Failed) != 1 || r.Failed[0].Work.Key.ProcessGUID != "c" {
		t.Fatalf("want a and b placed and c failed, got %+v", r)
	}
}

func TestBatchOrder(t *testing.T) {
	// Room for one 512 MB item only.
	cells := []Cell{{ID: "c", Zone: "z", Capacity: model.CellCapacity{MemoryMB: 600, DiskMB: 1000, Containers: 10}}}
	tests := []struct {
		name string
		work []Work
		want string // guid/index placed
	}{
		{"lower index first", []Work{work("a", 1, 512, 1), work("b", 0, 100, 1), work("b", 0, 512, 1)}, "b/0"},
		{"larger memory first", []Work{work("a", 0, 300, 1), work("b", 0, 512, 1)}, "b/0"},
		{"then process guid", []Work{work("b", 0, 512, 1), work("a", 0, 512, 1)}, "a/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Place(cells, tt.work)
			got := ""
			for _, p := range r.Placed {
				if p.Work.MemoryMB == 512 {
					got = fmt.Sprintf("%s/%d", p.Work.Key.ProcessGUID, p.Work.Key.Index)
				}
			}
			if got != tt.want {
				t.Errorf("512 MB item placed: %q, want %q (%+v)", got, tt.want, r)
			}
			// The result lists items in batch order.
			for i := 1; i < len(r.Placed); i++ {
				if before(&r.Placed[i].Work, &r.Placed[i-1].Work) {
					t.Errorf("Placed out of batch order: %+v", r.Placed)
				}
			}
		})
	}
}

func TestPlacementTags(t *testing.T) {
	tests := []struct {
		name       string
		cellTags   []string
		workTags   []string
		wantReason string // "" means placed
	}{
		{"both untagged", nil, nil, ""},
		{"same tags", []string{"gpu", "ssd"}, []string{"gpu", "ssd"}, ""},
		{"order and duplicates ignored", []string{"ssd", "gpu"}, []string{"gpu", "ssd", "gpu"}, ""},
		{"required tag missing", []string{"gpu"}, []string{"gpu", "ssd"},
			`found no compatible cell with placement tags "gpu" and "ssd"`},
		{"one required tag missing", nil, []string{"gpu"}, `found no compatible cell with placement tag "gpu"`},
		{"three tags", []string{"a"}, []string{"c", "b", "a"},
			`found no compatible cell with placement tags "a", "b" and "c"`},
		// Diego's isolation segments: a tagged cell is reserved for work asking for its tags.
		{"cell has a tag the work did not ask for", []string{"gpu", "ssd"}, []string{"gpu"},
			`found no compatible cell with placement tag "gpu"`},
		{"untagged work on a tagged cell", []string{"gpu"}, nil, "found no compatible cell with no placement tags"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := []Cell{{ID: "c", Zone: "z", Capacity: bigCap, PlacementTags: tt.cellTags}}
			r := Place(cells, []Work{work("w", 0, 1, 1, tt.workTags...)})
			if tt.wantReason == "" {
				if len(r.Placed) != 1 {
					t.Fatalf("want placed, got %+v", r)
				}
				return
			}
			if len(r.Failed) != 1 || r.Failed[0].Reason != tt.wantReason {
				t.Fatalf("want failure %q, got %+v", tt.wantReason, r)
			}
		})
	}
}

// TestPlacementTagsChooseCells checks that tags steer work to the matching cells even when
// others score better, and that zones without a matching cell are not a preferred zone.
func TestPlacementTagsChooseCells(t *testing.T) {
	cells := []Cell{
		{ID: "plain-a", Zone: "za", Capacity: bigCap},
		{ID: "plain-b", Zone: "zb", Capacity: bigCap},
		{ID: "gpu", Zone: "za", Capacity: model.CellCapacity{MemoryMB: 2048, DiskMB: 4096, Containers: 4},
			PlacementTags: []string{"gpu"},
			Instances:     []Instance{{ProcessGUID: "o", MemoryMB: 1024, Starting: true}}},
	}
	var ws []Work
	for i := range int32(3) {
		ws = append(ws, work("ml", i, 256, 256, "gpu"), work("web", i, 256, 256))
	}
	r := Place(cells, ws)
	if len(r.Failed) != 0 {
		t.Fatalf("unexpected failures: %+v", r.Failed)
	}
	for _, p := range r.Placed {
		onGPU := p.CellID == "gpu"
		if wantGPU := p.Work.Key.ProcessGUID == "ml"; onGPU != wantGPU {
			t.Errorf("%s/%d on %s", p.Work.Key.ProcessGUID, p.Work.Key.Index, p.CellID)
		}
	}
}

// TestOnePerZone places 3 instances over 3 cells in 3 zones: one lands in each, and with no
// earlier instances each goes to seed 003's zone (f(guid) + index) % 3.
func TestOnePerZone(t *testing.T) {
	cells := []Cell{
		{ID: "cell-3", Zone: "z3", Capacity: bigCap},
		{ID: "cell-1", Zone: "z1", Capacity: bigCap},
		{ID: "cell-2", Zone: "z2", Capacity: bigCap},
	}
	zoneOfCell := map[string]string{"cell-1": "z1", "cell-2": "z2", "cell-3": "z3"}
	zones := []string{"z1", "z2", "z3"}
	for _, guid := range []string{"app-a", "app-b", "app-c", "app-d"} {
		r := Place(cells, instances(guid, 3))
		if len(r.Placed) != 3 {
			t.Fatalf("%s: want 3 placed, got %+v", guid, r)
		}
		seen := map[string]bool{}
		for _, p := range r.Placed {
			z := zoneOfCell[p.CellID]
			if seen[z] {
				t.Errorf("%s: two instances in %s: %+v", guid, z, r.Placed)
			}
			seen[z] = true
			if want := zones[(int(zoneHash(guid)%3)+int(p.Work.Key.Index))%3]; z != want {
				t.Errorf("%s/%d in %s, want seed-003 zone %s", guid, p.Work.Key.Index, z, want)
			}
		}
	}
}

// TestSixOverTwoZones places 6 instances over 2 zones of 2 cells: 3 land in each zone, and
// the colocation penalty keeps any cell from getting 2 while its neighbour has 0.
func TestSixOverTwoZones(t *testing.T) {
	cells := []Cell{
		{ID: "a1", Zone: "za", Capacity: bigCap},
		{ID: "a2", Zone: "za", Capacity: bigCap},
		{ID: "b1", Zone: "zb", Capacity: bigCap},
		{ID: "b2", Zone: "zb", Capacity: bigCap,
			// Other work makes b2 look fuller, which must not outweigh colocation.
			Instances: []Instance{{ProcessGUID: "other", MemoryMB: 30000, DiskMB: 100000}}},
	}
	r := Place(cells, instances("app", 6))
	if len(r.Placed) != 6 {
		t.Fatalf("want 6 placed, got %+v", r)
	}
	perCell := map[string]int{}
	for _, p := range r.Placed {
		perCell[p.CellID]++
	}
	if za, zb := perCell["a1"]+perCell["a2"], perCell["b1"]+perCell["b2"]; za != 3 || zb != 3 {
		t.Errorf("zones got %d and %d, want 3 and 3 (%v)", za, zb, perCell)
	}
	for _, pair := range [][2]string{{"a1", "a2"}, {"b1", "b2"}} {
		if d := perCell[pair[0]] - perCell[pair[1]]; d > 1 || d < -1 {
			t.Errorf("uneven cells in a zone: %v", perCell)
		}
	}
}

// TestLaterIndexNeedsPreferredZone: zone za has none of the process's instances, so it is
// preferred, but it is full. Index 0 falls back to zb; index 2 must wait for za.
func TestLaterIndexNeedsPreferredZone(t *testing.T) {
	cells := []Cell{
		{ID: "a", Zone: "za", Capacity: model.CellCapacity{MemoryMB: 4096, DiskMB: 4096, Containers: 1},
			Instances: []Instance{{ProcessGUID: "other", MemoryMB: 128, DiskMB: 128}}},
		{ID: "b", Zone: "zb", Capacity: bigCap,
			Instances: []Instance{{ProcessGUID: "app", MemoryMB: 256, DiskMB: 512}}},
	}
	r := Place(cells, []Work{work("app", 2, 256, 512), work("app", 0, 256, 512), work("app", 1, 256, 512)})
	got := cellOf(r)
	if got["app/0"] != "b" || got["app/1"] != "b" {
		t.Errorf("indices 0 and 1 should fall back to b: %+v", r)
	}
	if len(r.Failed) != 1 || r.Failed[0].Work.Key.Index != 2 {
		t.Fatalf("want index 2 failed, got %+v", r)
	}
	if want := "insufficient resources in zone za"; r.Failed[0].Reason != want {
		t.Errorf("reason %q, want %q", r.Failed[0].Reason, want)
	}
	if !strings.HasPrefix(r.Failed[0].Reason, model.PlacementErrorInsufficientResources) {
		t.Errorf("reason %q does not start with %q", r.Failed[0].Reason, model.PlacementErrorInsufficientResources)
	}
}

// TestLaterIndexGoesToLeastLoadedZone: existing instances outweigh the hash, so index 2 goes
// to the zone holding fewer instances of the process even when that is not (f + 2) % 2.
func TestLaterIndexGoesToLeastLoadedZone(t *testing.T) {
	for _, crowded := range []string{"za", "zb"} {
		var cells []Cell
		for _, z := range []string{"za", "zb"} {
			c := Cell{ID: "cell-" + z, Zone: z, Capacity: bigCap}
			if z == crowded {
				c.Instances = []Instance{{ProcessGUID: "app", MemoryMB: 256}, {ProcessGUID: "app", MemoryMB: 256}}
			}
			cells = append(cells, c)
		}
		r := Place(cells, []Work{work("app", 2, 256, 512)})
		if len(r.Placed) != 1 || r.Placed[0].CellID == "cell-"+crowded {
			t.Errorf("crowded %s: want the other zone, got %+v", crowded, r)
		}
	}
}

func TestStartingWeightPrefersIdleCell(t *testing.T) {
	capacity := model.CellCapacity{MemoryMB: 1024, DiskMB: 1024, Containers: 8}
	// Same usage on both; "a" would win the id tie-break but is busy starting a container.
	cells := []Cell{
		{ID: "a", Zone: "z", Capacity: capacity, Instances: []Instance{{ProcessGUID: "x", MemoryMB: 100, DiskMB: 100, Starting: true}}},
		{ID: "b", Zone: "z", Capacity: capacity, Instances: []Instance{{ProcessGUID: "y", MemoryMB: 100, DiskMB: 100}}},
	}
	w := work("w", 0, 100, 100)
	r := Place(cells, []Work{w})
	if len(r.Placed) != 1 || r.Placed[0].CellID != "b" {
		t.Fatalf("want b, got %+v", r)
	}
	p := newPlacer(cells)
	if d := p.cells[0].score(&w) - p.cells[1].score(&w); math.Abs(d-0.25) > 1e-12 {
		t.Errorf("score difference %v, want 0.25", d)
	}

	// With no starting containers anywhere, equal scores go to the smaller id.
	cells[0].Instances[0].Starting = false
	if r := Place(cells, []Work{w}); len(r.Placed) != 1 || r.Placed[0].CellID != "a" {
		t.Fatalf("tie: want a, got %+v", r)
	}
}

// TestBatchBecomesStarting: a placement in the batch counts as a starting instance, so the
// next item of another process avoids that cell although both cells are otherwise equal.
func TestBatchBecomesStarting(t *testing.T) {
	cells := []Cell{{ID: "a", Zone: "z", Capacity: bigCap}, {ID: "b", Zone: "z", Capacity: bigCap}}
	got := cellOf(Place(cells, []Work{work("p", 0, 256, 256), work("q", 0, 256, 256)}))
	if got["p/0"] != "a" || got["q/0"] != "b" {
		t.Errorf("want p on a and q on b, got %v", got)
	}
}

func mixedCluster(rng *rand.Rand) ([]Cell, []Work) {
	var cells []Cell
	for i := range 12 {
		c := Cell{
			ID:       fmt.Sprintf("cell-%02d", i),
			Zone:     fmt.Sprintf("z%d", i%3),
			Capacity: model.CellCapacity{MemoryMB: 4096, DiskMB: 8192, Containers: 8},
		}
		if i%5 == 0 {
			c.PlacementTags = []string{"gpu"}
		}
		for j := range rng.Intn(4) {
			c.Instances = append(c.Instances, Instance{
				ProcessGUID: fmt.Sprintf("app-%d", rng.Intn(6)),
				MemoryMB:    int32(128 * (1 + rng.Intn(4))),
				DiskMB:      int32(256 * (1 + rng.Intn(4))),
				Starting:    j%2 == 0,
			})
		}
		cells = append(cells, c)
	}
	var ws []Work
	for a := range 6 {
		for i := range int32(10) {
			w := work(fmt.Sprintf("app-%d", a), i, int32(128*(1+a%3)), 512)
			if a == 5 {
				w.PlacementTags = []string{"gpu"}
			}
			ws = append(ws, w)
		}
	}
	ws = append(ws, work("app-x", 0, 100, 100, "missing"))
	return cells, ws
}

func TestDeterminism(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cells, ws := mixedCluster(rng)
	want := Place(cells, ws)
	if len(want.Placed) == 0 || len(want.Failed) == 0 {
		t.Fatalf("the case should both place and fail some work: %+v", want)
	}
	if got := Place(cells, ws); !reflect.DeepEqual(got, want) {
		t.Fatalf("second run differs")
	}
	for range 20 {
		c := append([]Cell(nil), cells...)
		w := append([]Work(nil), ws...)
		rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
		if got := Place(c, w); !reflect.DeepEqual(got, want) {
			t.Fatalf("result depends on input order:\n got %+v\nwant %+v", got, want)
		}
	}
}

func TestInputsUnchanged(t *testing.T) {
	cells, ws := mixedCluster(rand.New(rand.NewSource(2)))
	cells[1].PlacementTags = []string{"b", "a"}
	ws[0].PlacementTags = []string{"b", "a"}
	cellsBefore := fmt.Sprintf("%+v", cells)
	workBefore := fmt.Sprintf("%+v", ws)
	Place(cells, ws)
	if fmt.Sprintf("%+v", cells) != cellsBefore || fmt.Sprintf("%+v", ws) != workBefore {
		t.Fatal("Place modified its inputs")
	}
}

func TestNoCells(t *testing.T) {
	r := Place(nil, []Work{work("w", 0, 1, 1)})
	if len(r.Failed) != 1 || len(r.Placed) != 0 {
		t.Fatalf("want one failure, got %+v", r)
	}
	if r := Place(nil, nil); r.Placed != nil || r.Failed != nil {
		t.Fatalf("want empty result, got %+v", r)
	}
}

// scaleCase is 1,000 LRPs of 10 instances over 100 cells in 2 zones, with 20% room to spare.
func scaleCase() ([]Cell, []Work) {
	cells := make([]Cell, 100)
	for i := range cells {
		cells[i] = Cell{
			ID:       fmt.Sprintf("cell-%03d", i),
			Zone:     []string{"z1", "z2"}[i%2],
			Capacity: model.CellCapacity{MemoryMB: 120 * 256, DiskMB: 120 * 512, Containers: 120},
		}
	}
	ws := make([]Work, 0, 10000)
	for a := range 1000 {
		ws = append(ws, instances(fmt.Sprintf("app-%04d", a), 10)...)
	}
	return cells, ws
}

// TestScale checks the shape of the scale case: everything placed, 5 instances of each LRP
// per zone, and no cell with two instances of one LRP.
func TestScale(t *testing.T) {
	cells, ws := scaleCase()
	r := Place(cells, ws)
	if len(r.Failed) != 0 || len(r.Placed) != len(ws) {
		t.Fatalf("placed %d, failed %d (first: %+v)", len(r.Placed), len(r.Failed), r.Failed[:min(1, len(r.Failed))])
	}
	zoneOf := map[string]string{}
	for _, c := range cells {
		zoneOf[c.ID] = c.Zone
	}
	perZone := map[string]int{}
	perCell := map[string]int{}
	for _, p := range r.Placed {
		g := p.Work.Key.ProcessGUID
		perZone[g+"@"+zoneOf[p.CellID]]++
		perCell[g+"@"+p.CellID]++
	}
	for k, n := range perZone {
		if n != 5 {
			t.Fatalf("%s holds %d instances, want 5", k, n)
		}
	}
	for k, n := range perCell {
		if n > 1 {
			t.Fatalf("%s holds %d instances", k, n)
		}
	}
}

func BenchmarkPlace10kOver100Cells(b *testing.B) {
	cells, ws := scaleCase()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if r := Place(cells, ws); len(r.Placed) != len(ws) {
			b.Fatalf("placed %d of %d", len(r.Placed), len(ws))
		}
	}
}

// TestHeldCountsLikeInstances: usage summed into Held weighs exactly as the same instances
// listed one by one, for fit and for score.
func TestHeldCountsLikeInstances(t *testing.T) {
	capacity := model.CellCapacity{MemoryMB: 1000, DiskMB: 1000, Containers: 10}
	listed := []Cell{
		{ID: "a", Zone: "z", Capacity: capacity, Instances: []Instance{{ProcessGUID: "o", MemoryMB: 300, DiskMB: 300, Starting: true}, {ProcessGUID: "o", MemoryMB: 300, DiskMB: 300}}},
		{ID: "b", Zone: "z", Capacity: capacity, Instances: []Instance{{ProcessGUID: "p", MemoryMB: 100, DiskMB: 100}}},
	}
	summed := []Cell{
		{ID: "a", Zone: "z", Capacity: capacity, Held: Usage{MemoryMB: 600, DiskMB: 600, Containers: 2, Starting: 1}},
		{ID: "b", Zone: "z", Capacity: capacity, Held: Usage{MemoryMB: 100, DiskMB: 100, Containers: 1}},
	}
	var work []Work
	for i := range 10 {
		work = append(work, Work{Key: model.ActualLRPKey{ProcessGUID: "w", Index: int32(i), Domain: "d"}, MemoryMB: 150, DiskMB: 150})
	}
	a, b := Place(listed, work), Place(summed, work)
	if len(a.Placed) != len(b.Placed) || len(a.Failed) != len(b.Failed) {
		t.Fatalf("listed placed %d failed %d; summed placed %d failed %d", len(a.Placed), len(a.Failed), len(b.Placed), len(b.Failed))
	}
	for i := range a.Placed {
		if a.Placed[i].CellID != b.Placed[i].CellID || a.Placed[i].Work.Key != b.Placed[i].Work.Key {
			t.Fatalf("placement %d: listed %+v, summed %+v", i, a.Placed[i], b.Placed[i])
		}
	}
	if len(a.Failed) == 0 {
		t.Fatalf("want some of the work not to fit, got %+v", a)
	}
}

func TestTasksShareCellsWithInstances(t *testing.T) {
	cells := []Cell{
		{ID: "a", Zone: "z1", Capacity: model.CellCapacity{MemoryMB: 1000, DiskMB: 1000, Containers: 3}},
		{ID: "b", Zone: "z2", Capacity: model.CellCapacity{MemoryMB: 1000, DiskMB: 1000, Containers: 3},
			Held: Usage{MemoryMB: 800, DiskMB: 100, Containers: 1}},
	}
	task := func(guid string, mem int32) Work { return Work{TaskGUID: guid, MemoryMB: mem, DiskMB: 10} }
	// Tasks are not spread: both go to the emptier cell while it scores best, in any zone.
	r := Place(cells, []Work{task("t1", 100), task("t2", 100)})
	if len(r.Placed) != 2 || r.Placed[0].CellID != "a" || r.Placed[1].CellID != "a" {
		t.Fatalf("tasks placed %+v", r)
	}
	// A task needing more memory than any cell has left fails with placement's reason, and
	// instances and tasks fill the same containers.
	// Five containers are free (three on a, two on b) for six small items.
	r = Place(cells, []Work{task("big", 1100), work("lrp", 0, 100, 10), task("t3", 100), task("t4", 100), task("t5", 100),
		task("t6", 100), task("t7", 100)})
	if len(r.Failed) != 2 || r.Failed[0].Work.TaskGUID != "big" || r.Failed[0].Reason != model.PlacementErrorInsufficientResources {
		t.Fatalf("result %+v", r)
	}
	if len(r.Placed) != 5 {
		t.Fatalf("want five of the six small items placed, got %+v", r)
	}
}
