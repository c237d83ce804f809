package db_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestListFiltersEveryCombination: every combination of the list's filters (each set or
// not; index 0 is a filter too) selects what the filter says, in the lists' order — the
// query names only the conditions set.
func TestListFiltersEveryCombination(t *testing.T) {
	s := dbtest.NewStore(t)
	type key struct {
		guid, def, domain, cell string
		index                   int32
	}
	var all []key
	for _, guid := range []string{"app-a", "app-b"} {
		for _, def := range []string{"v1", "v2"} {
			for i := range int32(2) {
				k := key{guid, def, "d-" + guid[len(guid)-1:], fmt.Sprintf("cell-%d", (len(all))%2), i}
				if def == "v2" {
					k.domain = "d-x"
				}
				all = append(all, k)
				exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, instance_guid,
    cell_id, since, modification_epoch) VALUES ($1, $2, $3, $4, 'RUNNING', $5, $6, 1, 'e')`,
					k.guid, k.def, k.index, k.domain, fmt.Sprintf("ig-%d", len(all)), k.cell)
			}
		}
	}
	zero := int32(0)
	for mask := range 32 {
		var f model.ActualLRPFilter
		if mask&1 != 0 {
			f.ProcessGUID = "app-b"
		}
		if mask&2 != 0 {
			f.DefinitionID = "v2"
		}
		if mask&4 != 0 {
			f.Index = &zero
		}
		if mask&8 != 0 {
			f.Domain = "d-x"
		}
		if mask&16 != 0 {
			f.CellID = "cell-1"
		}
		var want []string
		for _, k := range all {
			if (f.ProcessGUID == "" || k.guid == f.ProcessGUID) && (f.DefinitionID == "" || k.def == f.DefinitionID) &&
				(f.Index == nil || k.index == *f.Index) && (f.Domain == "" || k.domain == f.Domain) &&
				(f.CellID == "" || k.cell == f.CellID) {
				want = append(want, fmt.Sprintf("%s/%d/%s", k.guid, k.index, k.def))
			}
		}
		got, err := s.ActualLRPs(t.Context(), f)
		if err != nil {
			t.Fatal(err)
		}
		var have []string
		for _, a := range got {
			have = append(have, fmt.Sprintf("%s/%d/%s", a.ProcessGUID, a.Index, a.DefinitionID))
		}
		slices.Sort(want) // the lists' order: guid, index, definition
		if !slices.Equal(have, want) {
			t.Errorf("filter %+v (index set: %v): got %v, want %v", f, f.Index != nil, have, want)
		}
	}
}

// TestListSurvivesDroppedConnections: after the server dropped every pooled connection (a
// restart), the next list is answered on a new one — the dead ones are discarded as
// database/sql's own queries discard them, however many the pool held.
func TestListSurvivesDroppedConnections(t *testing.T) {
	s := dbtest.NewStore(t)
	// Fill the pool: eight lists at once leave eight idle connections.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := s.DB().ExecContext(t.Context(), `SELECT pg_sleep(0.05)`); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if idle := s.DB().Stats().Idle; idle < 5 {
		t.Fatalf("%d idle connections, want the pool filled", idle)
	}
	var dbName string
	if err := s.DB().GetContext(t.Context(), &dbName, `SELECT current_database()`); err != nil {
		t.Fatal(err)
	}
	admin := dbtest.NewStore(t)
	if _, err := admin.DB().ExecContext(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, dbName); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the backends exit
	for _, f := range []model.ActualLRPFilter{{}, {ProcessGUID: "app"}} {
		if _, err := s.ActualLRPs(t.Context(), f); err != nil {
			t.Fatalf("list %+v after the connections were dropped: %v", f, err)
		}
	}
}
