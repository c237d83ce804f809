package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol"
	"github.com/updatable-lrps/bbs/tasks"
	"go.uber.org/zap"
)

// BenchmarkFleet measures the two reads of issue 14's targets over a seeded fleet, without
// the ten minutes of placing one (BenchmarkScale does that): 25,000 LRPs of 10 RUNNING
// instances on 1,000 fresh cells (BENCH_FLEET_LRPS changes the LRP count), written straight
// with SQL, then
//
//   - converge: one Store.Converge pass with nothing to do (target < 0.5 s);
//   - list/json and list/protocol: actual_lrps/list of the whole fleet from the real
//     handlers over HTTP, timed to the last byte (target < 1 s).
//
// Each sample is logged and the medians of the wall-clock time (median-s) and of the
// process's CPU time (cpu-s; PostgreSQL's is not in it) reported, as the machine is shared:
// go test ./bench -run '^$' -bench Fleet -benchtime 5x -v. BENCH_FLEET_EXPLAIN=1 has the
// server log every statement the store runs after the seeding with its plan, timings and
// buffers (auto_explain; the throwaway cluster's log is /tmp/bbs-test-pg-*/data.log), and
// BENCH_FLEET_HOLD=10m keeps the seeded database that long before measuring, its URL
// logged, for EXPLAIN ANALYZE from psql.
func BenchmarkFleet(b *testing.B) {
	nLRPs := envInt(b, "BENCH_FLEET_LRPS", 25000)
	url := dbtest.NewURL(b)
	store := openStore(b, url)
	start := time.Now()
	seedRunningFleet(b, store, nLRPs, 10, 1000)
	b.Logf("seeded %d instances in %s", nLRPs*10, time.Since(start).Round(time.Millisecond))
	if hold := os.Getenv("BENCH_FLEET_HOLD"); hold != "" {
		d, err := time.ParseDuration(hold)
		if err != nil {
			b.Fatalf("BENCH_FLEET_HOLD: %v", err)
		}
		b.Logf("holding %s for %s", url, d)
		time.Sleep(d)
	}
	if os.Getenv("BENCH_FLEET_EXPLAIN") != "" {
		// A database's settings reach new sessions only: a store of its own opens them.
		if _, err := store.DB().ExecContext(b.Context(), `DO $$ BEGIN
    EXECUTE format('ALTER DATABASE %I SET session_preload_libraries = auto_explain', current_database());
    EXECUTE format('ALTER DATABASE %I SET auto_explain.log_min_duration = 0', current_database());
    EXECUTE format('ALTER DATABASE %I SET auto_explain.log_analyze = on', current_database());
    EXECUTE format('ALTER DATABASE %I SET auto_explain.log_buffers = on', current_database());
    EXECUTE format('ALTER DATABASE %I SET auto_explain.log_nested_statements = on', current_database());
END $$`); err != nil {
			b.Fatal(err)
		}
		store = openStore(b, url)
	}

	b.Run("converge", func(b *testing.B) {
		samples(b, func() {
			res, err := store.Converge(b.Context(), db.ConvergeOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("pass: %s", res.StepTimes())
			if res.MissingIndices+res.Suspected+res.ExtrasToStop+res.ExtrasRemoved+res.MissingCells != 0 || len(res.ToStop) != 0 {
				b.Fatalf("a pass over a converged fleet did something: %+v", res)
			}
		})
	})
	// The lists read the store alone: the services are those of a process without cells or
	// Temporal.
	log := zap.NewNop()
	lrpService := lrps.NewService(store, nil, nil, log)
	taskService := tasks.NewService(store, nil, model.DefaultMaxTaskRetries, log)
	bbs := protocol.NewServer(protocol.Deps{Store: store, LRPs: lrpService, Tasks: taskService, Log: log})
	bbs.MarkReady()
	jsonAPI := api.NewServer(api.Deps{Store: store, LRPs: lrpService, Tasks: taskService, Log: log})
	jsonAPI.MarkReady()
	for _, tc := range []struct {
		name, body string
		h          http.Handler
	}{{"list/json", "{}", jsonAPI}, {"list/protocol", "", bbs}} {
		b.Run(tc.name, func(b *testing.B) {
			ts := httptest.NewServer(tc.h)
			defer ts.Close()
			var size int64
			samples(b, func() {
				resp, err := http.Post(ts.URL+"/v1/actual_lrps/list", "application/x-protobuf", strings.NewReader(tc.body))
				if err != nil {
					b.Fatal(err)
				}
				size, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("%d, %v", resp.StatusCode, err)
				}
			})
			b.ReportMetric(float64(size)/1e6, "MB")
		})
	}
}

func openStore(b *testing.B, url string) *db.Store {
	b.Helper()
	store, err := db.Open(b.Context(), url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	return store
}

// samples runs f b.N times, logs each duration and reports their median, and the median of
// this process's CPU time (user and system) for each: on a shared machine the wall-clock
// time varies with the others' load, the CPU time much less. PostgreSQL's CPU for each (the
// shared test cluster's, when the benchmark runs on it) is logged beside.
func samples(b *testing.B, f func()) {
	b.Helper()
	var took, cpu, pg []time.Duration
	for b.Loop() {
		_, parts := treeCPUByChild()
		start, cpu0 := time.Now(), processCPU(b)
		f()
		took, cpu = append(took, time.Since(start)), append(cpu, processCPU(b)-cpu0)
		_, now := treeCPUByChild()
		pg = append(pg, now["postgres"]-parts["postgres"])
	}
	slices.Sort(took)
	slices.Sort(cpu)
	slices.Sort(pg)
	b.Logf("%d samples: %v (CPU %v; PostgreSQL's %v)", len(took), took, cpu, pg)
	b.ReportMetric(took[len(took)/2].Seconds(), "median-s")
	b.ReportMetric(cpu[len(cpu)/2].Seconds(), "cpu-s")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// seedRunningFleet writes a converged fleet straight into the store in one transaction: a
// fresh domain "bench", lrps LRPs of perLRP instances (definition "v1", healthy), every
// instance RUNNING on one of cells fresh cells in 3 zones with the columns a started
// instance has, and a full event log; then the tables are vacuumed and analyzed, as a
// running system's autovacuum leaves them.
func seedRunningFleet(b *testing.B, store *db.Store, lrps, perLRP, cells int) {
	b.Helper()
	ctx := b.Context()
	tx, err := store.DB().BeginTxx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO domains (name) VALUES ('bench')`, nil},
		{`INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, expires_at)
SELECT 'cell-' || c, 'z' || (c % 3), 'http://127.0.0.1:1', 65536, 65536, 1000, now() + interval '1 day'
FROM generate_series(0, $1 - 1) AS c`, []any{cells}},
		{`INSERT INTO desired_lrps (process_guid, domain, instances, active_definition_id, healthy_definition_id, modification_epoch)
SELECT 'scale-' || lpad(g::text, 5, '0'), 'bench', $2, 'v1', 'v1', gen_random_uuid()::text
FROM generate_series(0, $1 - 1) AS g`, []any{lrps, perLRP}},
		{`INSERT INTO lrp_definitions (process_guid, definition_id, rootfs, memory_mb, disk_mb, run_info)
SELECT 'scale-' || lpad(g::text, 5, '0'), 'v1', 'preloaded:cflinuxfs4', 16, 16, '{"action":{"run":{"path":"/app"}}}'
FROM generate_series(0, $1 - 1) AS g`, []any{lrps}},
		{`INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, instance_guid, cell_id,
    address, ports, instance_address, since, modification_epoch, modification_index, availability_zone)
SELECT 'scale-' || lpad((i / $2::integer)::text, 5, '0'), 'v1', i % $2, 'bench', 'RUNNING', gen_random_uuid()::text,
    'cell-' || (i % $3), '10.0.' || (i % 250) || '.' || (i % 200),
    jsonb_build_array(jsonb_build_object('container_port', 8080, 'host_port', 61000 + i % 1000)),
    '10.255.' || (i % 250) || '.' || (i % 200), 1700000000000000000 + i, gen_random_uuid()::text, 2,
    'z' || (i % $3 % 3)
FROM generate_series(0, $1::integer * $2::integer - 1) AS i` + seedOrder(b), []any{lrps, perLRP, cells}},
		// A log at the size each pass prunes it to (DefaultEventsKept), all within the
		// retention: what a pass with nothing to do reads of it.
		{`INSERT INTO events (name, data)
SELECT 'actual_lrp_instance_changed', json_build_object('before', json_build_object('process_guid',
    'scale-' || lpad((e % $1)::text, 5, '0'), 'index', e % 10, 'state', 'CLAIMED'),
    'after', json_build_object('process_guid', 'scale-' || lpad((e % $1)::text, 5, '0'), 'index', e % 10,
    'state', 'RUNNING', 'instance_guid', gen_random_uuid()))
FROM generate_series(1, $2) AS e`, []any{lrps, db.DefaultEventsKept}},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			b.Fatalf("%v\n%s", err, q.sql)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := store.DB().ExecContext(ctx, `VACUUM (ANALYZE) actual_lrps, desired_lrps, lrp_definitions, cells, events`); err != nil {
		b.Fatal(err)
	}
}

// seedOrder is the order the seeded instances are written in, so in the table's heap:
// BENCH_FLEET_ORDER=random writes them in random order, as a placed fleet's are (desired,
// claimed and started in whatever order placement went), where the list reads them in key
// order; the default is key order, the list's own.
func seedOrder(b *testing.B) string {
	switch o := os.Getenv("BENCH_FLEET_ORDER"); o {
	case "", "key":
		return ""
	case "random":
		return " ORDER BY random()"
	default:
		b.Fatalf("BENCH_FLEET_ORDER %q: key or random", o)
		return ""
	}
}
