package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// MetricTagDynamic names a metric tag's value that a cell fills in per instance. The numbers
// are BBS's (MetricTagValue.DynamicValue), so that a value a newer client sends under a number
// we do not know still round-trips.
type MetricTagDynamic int32

// The dynamic values of BBS's metric tags.
const (
	MetricTagIndex        MetricTagDynamic = 1 // the instance's index
	MetricTagInstanceGUID MetricTagDynamic = 2 // the instance's guid
)

var dynamicNames = map[MetricTagDynamic]string{MetricTagIndex: "INDEX", MetricTagInstanceGUID: "INSTANCE_GUID"}

// Valid reports whether v is one of the dynamic values cells know.
func (v MetricTagDynamic) Valid() bool { _, ok := dynamicNames[v]; return ok }

// MarshalJSON writes BBS's name of the value ("INDEX"), or its number when it has no name.
func (v MetricTagDynamic) MarshalJSON() ([]byte, error) {
	if name, ok := dynamicNames[v]; ok {
		return json.Marshal(name)
	}
	return []byte(strconv.FormatInt(int64(v), 10)), nil
}

// UnmarshalJSON reads a name ("INDEX", "INSTANCE_GUID") or a number.
func (v *MetricTagDynamic) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		for d, n := range dynamicNames {
			if n == name {
				*v = d
				return nil
			}
		}
		return invalid("has an unknown dynamic value %q (INDEX or INSTANCE_GUID)", name)
	}
	var n int32
	if err := json.Unmarshal(b, &n); err != nil {
		return invalid("has a dynamic value that is neither a name (INDEX or INSTANCE_GUID) nor a number")
	}
	*v = MetricTagDynamic(n)
	return nil
}

// MetricTagValue is one metric tag in the JSON form of DesiredLRP.MetricTags, BBS's:
// {"static": "<value>"} or {"dynamic": "INDEX" | "INSTANCE_GUID"}.
type MetricTagValue struct {
	Static  string           `json:"static,omitempty"`
	Dynamic MetricTagDynamic `json:"dynamic,omitempty"`
}

// ParseMetricTag reads one value of DesiredLRP.MetricTags.
func ParseMetricTag(raw json.RawMessage) (MetricTagValue, error) {
	var v MetricTagValue
	if !bytes.HasPrefix(bytes.TrimLeft(raw, " \t\r\n"), []byte("{")) {
		return v, invalid(`must be {"static": "..."} or {"dynamic": "INDEX"}`)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		var me *Error
		if errors.As(err, &me) {
			return v, me
		}
		return v, invalid(`must be {"static": "..."} or {"dynamic": "INDEX"}: %v`, err)
	}
	return v, nil
}

// JSON is the value as DesiredLRP.MetricTags holds it.
func (v MetricTagValue) JSON() json.RawMessage {
	b, _ := json.Marshal(v) // a string and an integer: cannot fail
	return b
}

// Validate applies BBS's rule: a fixed value or a dynamic one a cell knows, not both.
func (v MetricTagValue) Validate() error {
	if (v.Static != "") == v.Dynamic.Valid() {
		return invalid("must have either a static value or a dynamic one (INDEX or INSTANCE_GUID)")
	}
	return nil
}

// validateMetricTags checks every tag, and, as BBS does when a DesiredLRP is desired with
// both, that the source_id tag is the metrics guid (metricsGUID "" skips that check).
func validateMetricTags(tags map[string]json.RawMessage, metricsGUID string) error {
	for name, raw := range tags {
		v, err := ParseMetricTag(raw)
		if err == nil {
			err = v.Validate()
		}
		if err != nil {
			return invalid("metric_tags[%q] %s", name, err.(*Error).Message)
		}
	}
	if len(tags) > 0 && metricsGUID != "" {
		raw, ok := tags["source_id"]
		if v, _ := ParseMetricTag(raw); !ok || v.Static != metricsGUID {
			return invalid("metric_tags[\"source_id\"] must be the metrics_guid %q", metricsGUID)
		}
	}
	return nil
}
