package db

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// TestDecodePortsIsEncodingJSON: the hand-written reader agrees with encoding/json on every
// input, and takes the fast path on the layouts the column holds: encoding/json's, as the
// store writes it, and jsonb's canonical one (the column's type before migration 0013).
func TestDecodePortsIsEncodingJSON(t *testing.T) {
	fast := []string{
		`[{"host_port": 61001, "container_port": 8080}]`,
		`[{"host_port": 0, "container_port": 0}, {"host_port": 4294967295, "container_port": 1}]`,
		`[{"container_port":8080,"host_port":61001}]`,
		` [ { "host_port" : 1 } ] `,
	}
	slow := []string{
		`[{}]`, `[{"host_port": 1, "host_port": 2}]`, `[{"host_port": 1.0}]`, `[{"host_port": 1e3}]`,
		`[{"host_port": 4294967296}]`, `[{"host_port": -1}]`, `[{"host_port": 01}]`, `[{"other": 1}]`,
		`[{"host_port": 1}] x`, `[{"host_port": 1},]`, `[{"host_port": "1"}]`, `{"host_port": 1}`,
		`[{"host_port": 1}`, `[{"host_port": 1 "container_port": 2}]`, `[{"HOST_PORT": 1}]`,
		`[{"host_port": 1, "container_port": 2, "x": null}]`, `null`, `[null]`,
	}
	for _, in := range append(fast, slow...) {
		var want []model.PortMapping
		wantErr := json.Unmarshal([]byte(in), &want)
		got, err := decodePorts([]byte(in))
		if (err != nil) != (wantErr != nil) || (err == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("decodePorts(%s) = %v, %v; encoding/json: %v, %v", in, got, err, want, wantErr)
		}
	}
	for _, in := range fast {
		if _, ok := scanPorts([]byte(in)); !ok {
			t.Errorf("%s took the slow path", in)
		}
	}
	for _, in := range slow {
		if _, ok := scanPorts([]byte(in)); ok {
			t.Errorf("%s was read by hand", in)
		}
	}
}
