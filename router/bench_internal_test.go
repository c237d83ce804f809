package router

import (
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
