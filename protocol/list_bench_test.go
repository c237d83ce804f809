package protocol_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/protocol"
	"go.uber.org/zap"
)

// seedFleet writes n RUNNING instances (10 per LRP, on 1,000 cells in 3 zones) straight into
// the store, as the scale benchmark's fleet leaves it.
func seedFleet(b *testing.B, store *db.Store, n int) {
	b.Helper()
	_, err := store.DB().ExecContext(b.Context(), `INSERT INTO actual_lrps (process_guid, definition_id, instance_index,
    domain, state, instance_guid, cell_id, address, ports, instance_address, since, modification_epoch,
    modification_index, availability_zone)
SELECT 'scale-' || lpad((i / 10)::text, 5, '0'), 'scale-' || lpad((i / 10)::text, 5, '0'), i % 10, 'cf-apps', 'RUNNING',
    gen_random_uuid()::text, 'cell-' || (i % 1000), '10.0.' || (i % 250) || '.' || (i % 200),
    jsonb_build_array(jsonb_build_object('container_port', 8080, 'host_port', 61000 + i % 1000)),
    '10.255.' || (i % 250) || '.' || (i % 200), 1700000000000000000 + i, gen_random_uuid()::text, 2, 'z' || (i % 3)
FROM generate_series(0, $1 - 1) AS i`, n)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.DB().ExecContext(b.Context(), `VACUUM (ANALYZE) actual_lrps`); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkListFleet lists 250,000 instances through the BBS protocol's streamed list and,
// for comparison, the JSON API's, over HTTP to the last byte (go test ./protocol -run '^$'
// -bench ListFleet -benchtime 3x).
func BenchmarkListFleet(b *testing.B) {
	store := dbtest.NewStore(b)
	seedFleet(b, store, 250_000)
	bbs := protocol.NewServer(store, zap.NewNop())
	bbs.MarkReady()
	jsonAPI := api.NewServer(store, nil, zap.NewNop())
	jsonAPI.MarkReady()
	for _, tc := range []struct {
		name, body string
		h          http.Handler
	}{{"protocol", "", bbs}, {"json", "{}", jsonAPI}} {
		b.Run(tc.name, func(b *testing.B) {
			ts := httptest.NewServer(tc.h)
			defer ts.Close()
			var size int64
			for b.Loop() {
				resp, err := http.Post(ts.URL+"/v1/actual_lrps/list", "application/x-protobuf", strings.NewReader(tc.body))
				if err != nil {
					b.Fatal(err)
				}
				size, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("%d, %v", resp.StatusCode, err)
				}
			}
			b.ReportMetric(float64(size)/1e6, "MB")
		})
	}
}
