package model_test

import (
	"encoding/json"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

func TestMetricTagsValidate(t *testing.T) {
	tags := func(kv ...string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = json.RawMessage(kv[i+1])
		}
		return m
	}
	for _, c := range []struct {
		name        string
		tags        map[string]json.RawMessage
		metricsGUID string
		valid       bool
	}{
		{"none", nil, "", true},
		{"static", tags("app", `{"static":"x"}`), "", true},
		{"dynamic by name", tags("index", `{"dynamic":"INDEX"}`, "guid", `{"dynamic":"INSTANCE_GUID"}`), "", true},
		{"dynamic by number", tags("index", `{"dynamic":1}`), "", true},
		// BBS takes a static value beside a dynamic one it does not know, and keeps both.
		{"static and an unknown dynamic number", tags("x", `{"static":"a","dynamic":7}`), "", true},
		{"static and a known dynamic", tags("x", `{"static":"a","dynamic":"INDEX"}`), "", false},
		{"neither", tags("x", `{}`), "", false},
		{"an unknown dynamic number alone", tags("x", `{"dynamic":7}`), "", false},
		{"an unknown dynamic name", tags("x", `{"dynamic":"CELL"}`), "", false},
		{"a bare string", tags("x", `"a"`), "", false},
		{"static not a string", tags("x", `{"static":5}`), "", false},
		{"not JSON", tags("x", `{`), "", false},
		{"source_id is the metrics guid", tags("source_id", `{"static":"m"}`, "x", `{"dynamic":"INDEX"}`), "m", true},
		{"source_id differs from the metrics guid", tags("source_id", `{"static":"n"}`), "m", false},
		{"no source_id beside a metrics guid", tags("x", `{"static":"m"}`), "m", false},
		{"a metrics guid and no tags", nil, "m", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := validDesired()
			d.MetricTags = c.tags
			d.MetricsGUID = c.metricsGUID
			check(t, d.Validate(), c.valid)
			// An update checks the tags alone: it carries no metrics guid.
			if c.metricsGUID == "" {
				u := model.DesiredLRPUpdate{MetricTags: &c.tags}
				check(t, u.Validate(), c.valid)
			}
		})
	}
}

func TestMetricTagJSON(t *testing.T) {
	for _, c := range []struct {
		v    model.MetricTagValue
		json string
	}{
		{model.MetricTagValue{Static: "a&b"}, `{"static":"a\u0026b"}`},
		{model.MetricTagValue{Dynamic: model.MetricTagIndex}, `{"dynamic":"INDEX"}`},
		{model.MetricTagValue{Dynamic: model.MetricTagInstanceGUID}, `{"dynamic":"INSTANCE_GUID"}`},
		{model.MetricTagValue{Static: "s", Dynamic: 7}, `{"static":"s","dynamic":7}`},
		{model.MetricTagValue{}, `{}`},
	} {
		if got := string(c.v.JSON()); got != c.json {
			t.Errorf("%+v.JSON() = %s, want %s", c.v, got, c.json)
		}
		back, err := model.ParseMetricTag(json.RawMessage(c.json))
		if err != nil || back != c.v {
			t.Errorf("ParseMetricTag(%s) = %+v, %v; want %+v", c.json, back, err, c.v)
		}
	}
}

func TestMaxPidsValidate(t *testing.T) {
	d := validDefinition()
	d.MaxPids = 1024
	check(t, d.Validate(), true)
	d.MaxPids = -1
	check(t, d.Validate(), false)
}
