package router

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// Telemetry counts, per LRP and definition, the requests the router sent, the 5xx answers
// and their latency (ROLLOUTS-NEXT.md section 5): what canary analysis compares, the
// router's metrics show and its reports carry to the BBS. Counters are cumulative since the
// router started; a request costs a lock-free map read and three atomic adds.
type Telemetry struct {
	// series maps a seriesKey to its *series: a sync.Map, whose reads take no lock, as a
	// request's count must not contend with the other cores' (an RWMutex's reader count
	// is one cache line every request writes).
	series sync.Map
}

type seriesKey struct{ guid, def string }

type series struct {
	errors atomic.Int64
	// latency counts requests by model.LatencyBounds bucket; their sum is the requests.
	latency    []atomic.Int64
	durationUS atomic.Int64
	dirty      atomic.Bool
}

// NewTelemetry returns empty counters.
func NewTelemetry() *Telemetry { return &Telemetry{} }

// Observe counts one request to def of guid that ended with status after d.
func (t *Telemetry) Observe(guid, def string, status int, d time.Duration) {
	k := seriesKey{guid, def}
	v, ok := t.series.Load(k)
	if !ok {
		v, _ = t.series.LoadOrStore(k, &series{latency: make([]atomic.Int64, len(model.LatencyBounds)+1)})
	}
	s := v.(*series)
	// The request is counted before its error, and a snapshot reads errors before requests:
	// a snapshot never has more errors than requests.
	s.latency[model.LatencyBucket(float64(d)/float64(time.Millisecond))].Add(1)
	s.durationUS.Add(d.Microseconds())
	if status >= 500 {
		s.errors.Add(1)
	}
	s.dirty.Store(true)
}

// Changed snapshots the series counted since the last Changed (all of them with all), and
// marks them reported. A report that could not be sent gives them back with Unreported.
func (t *Telemetry) Changed(all bool) []model.RouteTelemetry {
	var out []model.RouteTelemetry
	t.series.Range(func(k, v any) bool {
		if s := v.(*series); s.dirty.Swap(false) || all {
			out = append(out, s.snapshot(k.(seriesKey)))
		}
		return true
	})
	sortSeries(out)
	return out
}

func sortSeries(ts []model.RouteTelemetry) {
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].ProcessGUID != ts[j].ProcessGUID {
			return ts[i].ProcessGUID < ts[j].ProcessGUID
		}
		return ts[i].DefinitionID < ts[j].DefinitionID
	})
}

// Snapshot reads every series without marking anything reported.
func (t *Telemetry) Snapshot() []model.RouteTelemetry {
	out := []model.RouteTelemetry{}
	t.series.Range(func(k, v any) bool {
		out = append(out, v.(*series).snapshot(k.(seriesKey)))
		return true
	})
	sortSeries(out)
	return out
}

// Unreported marks series as changed again, so that the next report carries them.
func (t *Telemetry) Unreported(ts []model.RouteTelemetry) {
	for _, x := range ts {
		if v, ok := t.series.Load(seriesKey{x.ProcessGUID, x.DefinitionID}); ok {
			v.(*series).dirty.Store(true)
		}
	}
}

// Forget drops an LRP's series (it was removed).
func (t *Telemetry) Forget(guid string) {
	t.series.Range(func(k, _ any) bool {
		if k.(seriesKey).guid == guid {
			t.series.Delete(k)
		}
		return true
	})
}

func (s *series) snapshot(k seriesKey) model.RouteTelemetry {
	out := model.RouteTelemetry{ProcessGUID: k.guid, DefinitionID: k.def, Errors: s.errors.Load(),
		Latency: make([]int64, len(s.latency)), DurationUS: s.durationUS.Load()}
	for i := range s.latency {
		out.Latency[i] = s.latency[i].Load()
		out.Requests += out.Latency[i]
	}
	return out
}
