package router

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

func running(guid, def string, index int32, addr string, ports ...model.PortMapping) model.ActualLRP {
	return model.ActualLRP{
		ActualLRPKey:     model.ActualLRPKey{ProcessGUID: guid, DefinitionID: def, Index: index},
		ActualLRPNetInfo: model.ActualLRPNetInfo{Address: addr, Ports: ports},
		State:            model.StateRunning, Presence: model.PresenceOrdinary,
	}
}

func deployment(guid string, routePort uint32, defs map[string][]uint32) *model.LRPDeployment {
	routes, _ := json.Marshal([]CFRoute{{Hostnames: []string{guid + ".example.com"}, Port: routePort}})
	d := &model.LRPDeployment{ProcessGUID: guid, Routes: model.Routes{"cf-router": routes}, Definitions: map[string]model.LRPDefinition{}}
	for id, ports := range defs {
		d.Definitions[id] = model.LRPDefinition{DefinitionID: id, Ports: ports}
	}
	return d
}

func TestTableRoutesEachInstanceToItsOwnDefinitionsPort(t *testing.T) {
	tb := NewTable()
	// v1 serves on 8080, v2 moved the app to 9090: both stay routed during the rollout.
	tb.Replace([]LRP{LRPFromDeployment(deployment("web", 8080, map[string][]uint32{"v1": {8080}, "v2": {9090}}))},
		[]model.ActualLRP{
			running("web", "v1", 0, "10.0.0.1", model.PortMapping{ContainerPort: 8080, HostPort: 61000}),
			running("web", "v2", 1, "10.0.0.2", model.PortMapping{ContainerPort: 9090, HostPort: 62000}),
		})
	eps := tb.Endpoints("WEB.example.com")
	got := map[string]string{}
	for _, e := range eps {
		got[e.DefinitionID] = e.Address
	}
	if len(eps) != 2 || got["v1"] != "10.0.0.1:61000" || got["v2"] != "10.0.0.2:62000" {
		t.Fatalf("endpoints = %+v", eps)
	}
	if tb.Endpoints("other.example.com") != nil {
		t.Fatal("an unknown host has endpoints")
	}
}

func TestTableDropsRetiringAndStoppedInstances(t *testing.T) {
	tb := NewTable()
	a := running("web", "v1", 0, "10.0.0.1", model.PortMapping{ContainerPort: 8080, HostPort: 61000})
	b := running("web", "v1", 1, "10.0.0.1", model.PortMapping{ContainerPort: 8080, HostPort: 61001})
	tb.Replace([]LRP{LRPFromDeployment(deployment("web", 8080, map[string][]uint32{"v1": {8080}}))}, []model.ActualLRP{a, b})
	a.Retiring = true
	tb.SetInstance(a)
	if eps := tb.Endpoints("web.example.com"); len(eps) != 1 || eps[0].Index != 1 {
		t.Fatalf("after retiring index 0: %+v", eps)
	}
	b.State = model.StateCrashed
	tb.SetInstance(b)
	if eps := tb.Endpoints("web.example.com"); len(eps) != 0 {
		t.Fatalf("after the crash: %+v", eps)
	}
	tb.SetInstance(running("web", "v1", 2, "10.0.0.3", model.PortMapping{ContainerPort: 8080, HostPort: 61002}))
	tb.RemoveLRP("web")
	if eps := tb.Endpoints("web.example.com"); len(eps) != 0 {
		t.Fatalf("after the LRP went: %+v", eps)
	}
}

func TestTableRoundRobin(t *testing.T) {
	tb := NewTable()
	var lrps []model.ActualLRP
	for i := int32(0); i < 3; i++ {
		lrps = append(lrps, running("web", "v1", i, "10.0.0.1", model.PortMapping{ContainerPort: 8080, HostPort: 61000 + uint32(i)}))
	}
	tb.Replace([]LRP{LRPFromDeployment(deployment("web", 8080, map[string][]uint32{"v1": {8080}}))}, lrps)
	first := map[string]int{}
	for i := 0; i < 30; i++ {
		first[tb.Endpoints("web.example.com")[0].Address]++
	}
	if len(first) != 3 || first["10.0.0.1:61000"] != 10 {
		t.Fatalf("first choices = %v", first)
	}
}

// A GET whose first instance refuses connections is retried on another; a POST is not.
func TestProxyRetriesIdempotentRequestsOnConnectErrors(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello")) }))
	defer app.Close()
	u, _ := url.Parse(app.URL)
	host, portStr, _ := net.SplitHostPort(u.Host)
	port, _ := strconv.Atoi(portStr)
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadPort := dead.Addr().(*net.TCPAddr).Port
	dead.Close() // nothing listens there now

	tb := NewTable()
	tb.Replace([]LRP{LRPFromDeployment(deployment("web", 8080, map[string][]uint32{"v1": {8080}}))}, []model.ActualLRP{
		running("web", "v1", 0, host, model.PortMapping{ContainerPort: 8080, HostPort: uint32(port)}),
		running("web", "v1", 1, "127.0.0.1", model.PortMapping{ContainerPort: 8080, HostPort: uint32(deadPort)}),
	})
	p := NewProxy(tb)
	for i := 0; i < 4; i++ {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "http://web.example.com/", nil)
		p.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Body.String() != "hello" || rec.Header().Get("X-LRP-Definition") != "v1" {
			t.Fatalf("GET %d: %d %q", i, rec.Code, rec.Body)
		}
	}
	if p.Retries.Load() == 0 {
		t.Fatal("no retry was counted although one instance refuses connections")
	}
	failedPosts := 0
	for i := 0; i < 4; i++ {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://web.example.com/", nil))
		if rec.Code == http.StatusBadGateway {
			failedPosts++
		}
	}
	if failedPosts == 0 {
		t.Fatal("a POST to the dead instance was retried; only idempotent requests may be")
	}
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://nobody.example.com/", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("unknown host: %d", rec.Code)
	}
}
