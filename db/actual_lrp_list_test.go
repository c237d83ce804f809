package db_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// TestListReadsEveryValueAsStored: the streamed list (EachActualLRP, which reuses its row
// and instance from one row to the next) gives back every value as stored: texts PostgreSQL
// quotes or escapes somewhere — empty strings, quotes, backslashes, parentheses, commas,
// white space, non-ASCII — NULL and non-NULL JSON columns, negative and large numbers.
func TestListReadsEveryValueAsStored(t *testing.T) {
	s := dbtest.NewStore(t)
	tricky := []string{``, `"`, `""`, `\`, `\\`, `a,b`, `(x)`, `( )`, "line\nbreak\ttab", ` lead`, `trail `,
		`é ü 中`, `"quoted, (and) \escaped\"`, `NULL`, `{}`, `,`, `)`, `(`, `a"b`, `\"`}
	for i, v := range tricky {
		exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, instance_guid,
    cell_id, address, ports, instance_address, placement_error, since, crash_count, crash_reason,
    modification_epoch, modification_index, retiring, availability_zone, preferred_address,
    internal_routes, metric_tags, not_ready)
SELECT 'app', 'v1', i, 'cf-apps', 'RUNNING', 'ig-' || i, 'cell 1', $2, $3, $2, $2, -42 - i, i, $2, $2, i, i % 2 = 0,
    $2, 'HOST', CASE WHEN i % 3 = 0 THEN NULL ELSE json_build_array(json_build_object('hostname', $2::text)) END,
    CASE WHEN i % 2 = 0 THEN NULL ELSE json_build_object('k', $2::text) END, i % 3 = 1
FROM (SELECT $1::integer AS i) n`,
			i, v, `[{"container_port": 8080, "host_port": `+strings.Repeat("1", i%5+1)+`}]`)
	}
	got, err := s.ActualLRPs(t.Context(), model.ActualLRPFilter{ProcessGUID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(tricky) {
		t.Fatalf("%d instances listed, want %d", len(got), len(tricky))
	}
	for i, a := range got {
		v := tricky[i]
		var routes []string
		if i%3 != 0 && v != "" {
			routes = []string{v}
		}
		var tags map[string]string
		if i%2 != 0 {
			tags = map[string]string{"k": v}
		}
		want := model.ActualLRP{
			ActualLRPKey:         model.ActualLRPKey{ProcessGUID: "app", DefinitionID: "v1", Index: int32(i), Domain: "cf-apps"},
			ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: a.InstanceGUID, CellID: "cell 1"},
			ActualLRPNetInfo: model.ActualLRPNetInfo{Address: v, InstanceAddress: v, PreferredAddress: "HOST",
				Ports: a.Ports},
			State: model.StateRunning, PlacementError: v, Since: int64(-42 - i), CrashCount: int32(i), CrashReason: v,
			Presence: model.PresenceOrdinary, ModificationTag: model.ModificationTag{Epoch: v, Index: uint32(i)},
			AvailabilityZone: v, Retiring: i%2 == 0, InternalRoutes: routes,
			MetricTags: tags, NotReady: i%3 == 1,
		}
		if !reflect.DeepEqual(a, want) {
			t.Errorf("instance %d (%q):\n got %+v\nwant %+v", i, v, a, want)
		}
		if len(a.Ports) != 1 || a.Ports[0].ContainerPort != 8080 || a.InstanceGUID != fmt.Sprintf("ig-%d", i) {
			t.Errorf("instance %d: ports %v, instance guid %q", i, a.Ports, a.InstanceGUID)
		}
	}
}
