package router

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// fromScratch derives every host's route anew from tb's LRPs, instances and splits: what the
// table's incremental upkeep must always equal.
func fromScratch(tb *Table) map[string]*Route {
	fresh := NewTable()
	fresh.lrps, fresh.instances, fresh.splits = tb.lrps, tb.instances, tb.splits
	for guid, l := range fresh.lrps {
		fresh.indexLocked(guid, l)
	}
	for h := range fresh.byHost {
		fresh.rebuildHostLocked(h)
	}
	return fresh.hosts
}

// randomLRP routes guid on one or two of a few shared host names (in either case, one name
// sometimes twice), on ports its definitions may or may not expose.
func randomLRP(r *rand.Rand, guid string) LRP {
	hosts := []string{"a.example.com", "B.example.com", "b.example.com", "c.example.com"}
	var routes []CFRoute
	for n := 1 + r.Intn(2); n > 0; n-- {
		routes = append(routes, CFRoute{Hostnames: []string{hosts[r.Intn(len(hosts))], hosts[r.Intn(len(hosts))]},
			Port: []uint32{8080, 9090}[r.Intn(2)]})
	}
	raw, _ := json.Marshal(routes)
	d := &model.LRPDeployment{ProcessGUID: guid, Routes: model.Routes{"cf-router": raw}, Definitions: map[string]model.LRPDefinition{
		"v1": {DefinitionID: "v1", Ports: []uint32{8080}}, "v2": {DefinitionID: "v2", Ports: []uint32{[]uint32{8080, 9090}[r.Intn(2)]}},
	}}
	if r.Intn(3) == 0 {
		d.Routes = nil // no routes at all
	}
	return LRPFromDeployment(d)
}

// The table rebuilds only the hosts a change touches; after any sequence of changes its
// routes are those a rebuild from scratch derives.
func TestTableUpkeepEqualsARebuildFromScratch(t *testing.T) {
	guids := []string{"g0", "g1", "g2", "g3", "g4"}
	for seed := int64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewSource(seed))
		tb := NewTable()
		gen := int64(0)
		for op := 0; op < 300; op++ {
			guid := guids[r.Intn(len(guids))]
			var did string
			switch k := r.Intn(10); {
			case k < 2:
				tb.SetLRP(randomLRP(r, guid))
				did = "SetLRP"
			case k < 6:
				a := running(guid, []string{"v1", "v2"}[r.Intn(2)], int32(r.Intn(3)),
					fmt.Sprintf("10.0.%d.%d", r.Intn(4), r.Intn(250)),
					model.PortMapping{ContainerPort: 8080, HostPort: 61000 + uint32(r.Intn(100))},
					model.PortMapping{ContainerPort: 9090, HostPort: 62000 + uint32(r.Intn(100))})
				if r.Intn(4) == 0 {
					a.State = model.StateClaimed
				}
				tb.SetInstance(a)
				did = "SetInstance"
			case k < 7:
				tb.RemoveInstance(running(guid, []string{"v1", "v2"}[r.Intn(2)], int32(r.Intn(3)), ""))
				did = "RemoveInstance"
			case k < 8:
				gen++
				tb.SetSplit(model.TrafficSplit{ProcessGUID: guid, Generation: gen, Weights: map[string]int32{"v2": int32(r.Intn(101))}})
				did = "SetSplit"
			case k < 9:
				tb.RemoveLRP(guid)
				did = "RemoveLRP"
			default:
				var lrps []LRP
				var actual []model.ActualLRP
				for _, g := range guids[:1+r.Intn(len(guids))] {
					lrps = append(lrps, randomLRP(r, g))
					actual = append(actual, running(g, "v1", 0, fmt.Sprintf("10.1.0.%d", r.Intn(250)),
						model.PortMapping{ContainerPort: 8080, HostPort: 61000}))
				}
				tb.Replace(lrps, actual)
				did = "Replace"
			}
			if want := fromScratch(tb); !reflect.DeepEqual(tb.hosts, want) {
				t.Fatalf("seed %d, op %d (%s of %s): the table's routes\n%v\ndiffer from a rebuild's\n%v", seed, op, did, guid, tb.hosts, want)
			}
		}
	}
}
