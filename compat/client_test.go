package compat

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"code.cloudfoundry.org/bbs"
	"code.cloudfoundry.org/bbs/models"
	"code.cloudfoundry.org/lager/v3"
	"github.com/gogo/protobuf/proto"
)

// newClient is the real BBS client of the dev system's listener, over plain HTTP as on
// loopback, with the client's defaults (3 attempts per request).
func newClient(t *testing.T) bbs.InternalClient { return clientAt(t, sys.protocolURL) }

func clientAt(t *testing.T, url string) bbs.InternalClient {
	t.Helper()
	c, err := bbs.NewClientWithConfig(bbs.ClientConfig{URL: url})
	if err != nil {
		t.Fatalf("bbs.NewClientWithConfig(%s): %v", url, err)
	}
	return c
}

// testLogger is the lager logger the client logs through, into the test's log at debug level
// (so a failure shows every attempt of every request).
func testLogger(t *testing.T) lager.Logger {
	l := lager.NewLogger("compat")
	l.RegisterSink(lager.NewWriterSink(testWriter{t}, lager.DEBUG))
	return l
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// traceID is the X-Vcap-Request-Id the client sends for the test's requests.
func traceID(t *testing.T) string { return "compat-" + strings.ReplaceAll(t.Name(), "/", "-") }

func TestPingAnswersTrue(t *testing.T) {
	if !newClient(t).Ping(testLogger(t), traceID(t)) {
		t.Fatal("Ping = false, want true")
	}
}

func TestUpsertDomainThenDomainsListsIt(t *testing.T) {
	c, log := newClient(t), testLogger(t)
	// A TTL of 0 is a domain that never expires, in BBS as in ours.
	for _, d := range []struct {
		name string
		ttl  time.Duration
	}{{"compat-forever", 0}, {"compat-an-hour", time.Hour}} {
		if err := c.UpsertDomain(log, traceID(t), d.name, d.ttl); err != nil {
			t.Fatalf("UpsertDomain(%s, %s): %v", d.name, d.ttl, err)
		}
	}
	// Upserting again bumps the TTL of a domain, which is listed once.
	if err := c.UpsertDomain(log, traceID(t), "compat-an-hour", 2*time.Hour); err != nil {
		t.Fatalf("UpsertDomain again: %v", err)
	}
	domains, err := c.Domains(log, traceID(t))
	if err != nil {
		t.Fatalf("Domains: %v", err)
	}
	for _, want := range []string{"compat-forever", "compat-an-hour"} {
		if n := count(domains, want); n != 1 {
			t.Errorf("Domains = %q: lists %s %d times, want once", domains, want, n)
		}
	}
}

func TestDomainWithTTLExpires(t *testing.T) {
	c, log := newClient(t), testLogger(t)
	const ttl = 3 * time.Second
	if err := c.UpsertDomain(log, traceID(t), "compat-ttl", ttl); err != nil {
		t.Fatalf("UpsertDomain: %v", err)
	}
	upserted := time.Now()
	domains, err := c.Domains(log, traceID(t))
	if err != nil {
		t.Fatalf("Domains: %v", err)
	}
	if !slices.Contains(domains, "compat-ttl") && time.Since(upserted) < ttl {
		t.Fatalf("Domains = %q right after the upsert, want compat-ttl in it", domains)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ttl+15*time.Second)
	defer cancel()
	gone := waitFor(ctx, func() bool {
		domains, err = c.Domains(log, traceID(t))
		return err == nil && !slices.Contains(domains, "compat-ttl")
	})
	if !gone {
		t.Fatalf("compat-ttl (TTL %s) is still listed %s after its upsert: %q, %v", ttl, time.Since(upserted).Round(time.Second), domains, err)
	}
	if age := time.Since(upserted); age < ttl {
		t.Errorf("compat-ttl was gone after %s, before its TTL of %s", age, ttl)
	}
}

// TestUpsertDomainTakesAnyTTL: BBS stores any TTL its uint32 field carries; the largest is
// 136 years.
func TestUpsertDomainTakesAnyTTL(t *testing.T) {
	c, log := newClient(t), testLogger(t)
	if err := c.UpsertDomain(log, traceID(t), "compat-max-ttl", math.MaxUint32*time.Second); err != nil {
		t.Fatalf("UpsertDomain with a TTL of %d s: %v", uint32(math.MaxUint32), err)
	}
	domains, err := c.Domains(log, traceID(t))
	if err != nil || !slices.Contains(domains, "compat-max-ttl") {
		t.Errorf("Domains = %q, %v; want compat-max-ttl in it", domains, err)
	}
}

// TestUnknownFieldsAreSkipped: BBS's decoders skip fields they do not know, so a client
// built from newer .proto files than ours is served.
func TestUnknownFieldsAreSkipped(t *testing.T) {
	body, err := proto.Marshal(&models.UpsertDomainRequest{Domain: "compat-unknown-field", Ttl: 60})
	if err != nil {
		t.Fatal(err)
	}
	// Field 999 as a varint (tag (999<<3)|0 = 7992), then field 1000 as bytes: fields no
	// version of UpsertDomainRequest has.
	body = append(body, 0xb8, 0x3e, 0x01, 0xc2, 0x3e, 0x03, 'a', 'b', 'c')
	var resp models.UpsertDomainResponse
	status, ctype, err := postProto(http.DefaultClient, sys.protocolURL+"/v1/domains/upsert", body, &resp)
	if err != nil || status != http.StatusOK || ctype != protoContentType || resp.Error != nil {
		t.Fatalf("upsert with unknown fields: %d %q %v, error %v", status, ctype, err, resp.Error)
	}
	domains, err := newClient(t).Domains(testLogger(t), traceID(t))
	if err != nil || !slices.Contains(domains, "compat-unknown-field") {
		t.Errorf("Domains = %q, %v; want compat-unknown-field in it", domains, err)
	}
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestCellsListsTheDevCells: the dev mode's three cells (cell-1 and cell-3 in zone z1, cell-2
// in z2, each with the cell command's default capacity), as presences a stock BBS could hold.
func TestCellsListsTheDevCells(t *testing.T) {
	cells, err := newClient(t).Cells(testLogger(t), traceID(t))
	if err != nil {
		t.Fatalf("Cells: %v", err)
	}
	want := map[string]string{"cell-1": "z1", "cell-2": "z2", "cell-3": "z1"}
	if len(cells) != len(want) {
		t.Errorf("Cells lists %d cells, want %d", len(cells), len(want))
	}
	wantCapacity := models.CellCapacity{MemoryMb: 8192, DiskMb: 16384, Containers: 100}
	for _, c := range cells {
		t.Logf("cell %s", c)
		zone, ok := want[c.CellId]
		if !ok {
			t.Errorf("unexpected cell %q", c.CellId)
			continue
		}
		delete(want, c.CellId)
		if c.Zone != zone {
			t.Errorf("cell %s: zone %q, want %q", c.CellId, c.Zone, zone)
		}
		if c.Capacity == nil || *c.Capacity != wantCapacity {
			t.Errorf("cell %s: capacity %v, want %v", c.CellId, c.Capacity, &wantCapacity)
		}
		// The BBS only holds presences that pass this (the rep validates its own before it
		// registers), so clients may take for granted what it checks, e.g. a rep address.
		if err := c.Validate(); err != nil {
			t.Errorf("cell %s does not pass CellPresence.Validate: %v", c.CellId, err)
		}
	}
	for id := range want {
		t.Errorf("cell %s is not listed", id)
	}
}
