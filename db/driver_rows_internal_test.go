package db

import (
	"database/sql/driver"
	"strings"
	"testing"
)

// TestActualColumnCountIsActualColumns: the list reads its rows by position (driverActualRow).
func TestActualColumnCountIsActualColumns(t *testing.T) {
	if n := strings.Count(actualColumns, ",") + 1; n != actualColumnCount {
		t.Fatalf("actualColumns names %d columns, actualColumnCount says %d", n, actualColumnCount)
	}
}

// TestDriverActualRowRefusesWhatItDoesNotExpect: a row of another shape or with a value of
// another type (a schema changed under the query) is an error, never a panic or a zero.
func TestDriverActualRowRefusesWhatItDoesNotExpect(t *testing.T) {
	good := func() []driver.Value {
		return []driver.Value{"app", "v1", int64(3), "ORDINARY", "cf-apps", "RUNNING", "ig", "cell", "10.0.0.1",
			[]byte(`[{"container_port":8080,"host_port":61001}]`), "10.1.0.1", "", int64(42), int64(1), "", "epoch",
			int64(7), false, "z1", "", nil, []byte(`{"k":"v"}`), true}
	}
	r, err := driverActualRow(good())
	if err != nil {
		t.Fatal(err)
	}
	if r.ProcessGUID != "app" || r.Index != 3 || r.Since != 42 || r.ModificationIndex != 7 || !r.NotReady || r.InternalRoutes != nil {
		t.Fatalf("read %+v", r)
	}
	for _, tc := range []struct {
		name string
		edit func([]driver.Value) []driver.Value
	}{
		{"a column short", func(v []driver.Value) []driver.Value { return v[:len(v)-1] }},
		{"a column more", func(v []driver.Value) []driver.Value { return append(v, "x") }},
		{"text as a number", func(v []driver.Value) []driver.Value { v[0] = int64(1); return v }},
		{"a number as text", func(v []driver.Value) []driver.Value { v[2] = "3"; return v }},
		{"NULL text", func(v []driver.Value) []driver.Value { v[5] = nil; return v }},
		{"a boolean as text", func(v []driver.Value) []driver.Value { v[17] = "f"; return v }},
		{"JSON as a boolean", func(v []driver.Value) []driver.Value { v[9] = true; return v }},
	} {
		if _, err := driverActualRow(tc.edit(good())); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
