package router

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

func benchTable(weighted bool) *Table {
	tb := NewTable()
	var lrps []model.ActualLRP
	for i := int32(0); i < 10; i++ {
		def := "v1"
		if i == 9 {
			def = "v2"
		}
		lrps = append(lrps, running("web", def, i, "10.0.0.1", model.PortMapping{ContainerPort: 8080, HostPort: 61000 + uint32(i)}))
	}
	tb.Replace([]LRP{LRPFromDeployment(deployment("web", 8080, map[string][]uint32{"v1": {8080}, "v2": {8080}}))}, lrps)
	if weighted {
		tb.SetSplit(model.TrafficSplit{ProcessGUID: "web", Generation: 1, Weights: map[string]int32{"v2": 10}})
	}
	return tb
}

func BenchmarkChoose(b *testing.B) {
	for _, weighted := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "weighted"}[weighted]
		b.Run(name, func(b *testing.B) {
			p := NewProxy(benchTable(weighted))
			req := httptest.NewRequest("GET", "http://web.example.com/", nil)
			route := p.Table.Route("web.example.com")
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				p.choose(route, req)
			}
		})
	}
}

func BenchmarkObserve(b *testing.B) {
	tm := NewTelemetry()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tm.Observe("web", "v2", 200, 3*time.Millisecond)
	}
}

func BenchmarkObserveParallel(b *testing.B) {
	tm := NewTelemetry()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tm.Observe("web", "v2", 200, 3*time.Millisecond)
		}
	})
}

// fleetTable is a table of n routed LRPs of 4 RUNNING instances each, one host name apiece.
func fleetTable(n int) *Table {
	tb := NewTable()
	lrps := make([]LRP, 0, n)
	var actual []model.ActualLRP
	for i := 0; i < n; i++ {
		guid := fmt.Sprintf("app-%05d", i)
		lrps = append(lrps, LRPFromDeployment(deployment(guid, 8080, map[string][]uint32{"v1": {8080}})))
		for j := int32(0); j < 4; j++ {
			actual = append(actual, running(guid, "v1", j, fmt.Sprintf("10.0.%d.%d", i/250, i%250),
				model.PortMapping{ContainerPort: 8080, HostPort: 61000 + uint32(j)}))
		}
	}
	tb.Replace(lrps, actual)
	return tb
}

// BenchmarkSetInstance is what one instance event costs the router's table at a fleet size:
// it should not grow with the fleet (a rollout's events at Diego's scale, 250,000 instances).
func BenchmarkSetInstance(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("lrps=%d", n), func(b *testing.B) {
			tb := fleetTable(n)
			a := running("app-00000", "v1", 0, "10.0.0.0", model.PortMapping{ContainerPort: 8080, HostPort: 61000})
			claimed := a
			claimed.State = model.StateClaimed
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					tb.SetInstance(claimed)
				} else {
					tb.SetInstance(a)
				}
			}
		})
	}
}
