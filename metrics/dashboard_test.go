package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/metrics"
	"github.com/updatable-lrps/bbs/model"
)

// descRecorder is a Registerer that keeps the names of what is registered on it.
type descRecorder struct{ names map[string]bool }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *descRecorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		r.names[fqName.FindStringSubmatch(d.String())[1]] = true
	}
	return nil
}

func (r *descRecorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		r.Register(c)
	}
}

func (r *descRecorder) Unregister(prometheus.Collector) bool { return false }

// registered are the names of every series the processes register (package metrics), and
// of those NewRegistry gives every process (go_*, process_*).
func registered(t *testing.T) (bbs, all map[string]bool) {
	t.Helper()
	rec := &descRecorder{names: map[string]bool{}}
	metrics.NewConvergence(rec)
	metrics.NewRollouts(rec)
	metrics.NewHTTP(rec)
	metrics.RegisterRouter(rec, metrics.RouterStats{})
	metrics.RegisterCell(rec, model.CellCapacity{}, nil)
	bbs = rec.names
	all = map[string]bool{}
	for name := range bbs {
		all[name] = true
	}
	families, err := metrics.NewRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		all[f.GetName()] = true
	}
	return bbs, all
}

// queried are the series names in the dashboard's queries (metric names: bbs_, go_,
// process_ and up).
func queried(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("../deploy/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name, Type, Query string
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("deploy/grafana-dashboard.json: %v", err)
	}
	if !slices.ContainsFunc(dash.Templating.List, func(v struct{ Name, Type, Query string }) bool {
		return v.Type == "datasource" && v.Query == "prometheus"
	}) {
		t.Error("the dashboard has no Prometheus data source variable")
	}
	name := regexp.MustCompile(`\b(?:bbs|go|process)_[a-z0-9_]+\b|\bup\b`)
	grouping := regexp.MustCompile(`\b(?:by|without)\s*\([^)]*\)`)
	out := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			// Label names in by (...) and without (...) are not series.
			expr := grouping.ReplaceAllString(tg.Expr, "")
			for _, n := range name.FindAllString(expr, -1) {
				out[n] = true
			}
		}
	}
	return out
}

// series is the registered series a queried name reads: a histogram's _bucket, _sum and
// _count read the histogram.
func series(name string, all map[string]bool) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base := strings.TrimSuffix(name, suffix); base != name && all[base] {
			return base
		}
	}
	return name
}

// TestDashboardQueriesWhatTheCodeRegisters keeps deploy/grafana-dashboard.json and the code
// in step: every series a panel queries is one a process registers, and every bbs_ series
// registered has a panel.
func TestDashboardQueriesWhatTheCodeRegisters(t *testing.T) {
	bbs, all := registered(t)
	shown := map[string]bool{}
	for q := range queried(t) {
		s := series(q, all)
		if q != "up" && !all[s] {
			t.Errorf("the dashboard queries %s, which no process registers", q)
		}
		shown[s] = true
	}
	for name := range bbs {
		if !shown[name] {
			t.Errorf("%s has no panel on the dashboard", name)
		}
	}
}

// TestEverySeriesIsDocumented keeps docs/METRICS.md's list complete.
func TestEverySeriesIsDocumented(t *testing.T) {
	raw, err := os.ReadFile("../docs/METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	bbs, _ := registered(t)
	for name := range bbs {
		// `name` or, with its labels, `name{label}`.
		if !strings.Contains(string(raw), "`"+name+"`") && !strings.Contains(string(raw), "`"+name+"{") {
			t.Errorf("docs/METRICS.md does not list `%s`", name)
		}
	}
}
