package db

import (
	"io/fs"
	"strings"
	"testing"
)

// The queries' list of in-progress states (from the model) is the predicate of the index
// that allows one rollout in progress per LRP: were they to differ, the index would neither
// serve those queries nor enforce what the model means.
func TestInProgressStatesMatchTheIndex(t *testing.T) {
	files, err := fs.Glob(migrations, "migrations/*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	var last, index string // the latest migration to create the index, and its statement
	for _, f := range files {
		b, err := fs.ReadFile(migrations, f)
		if err != nil {
			t.Fatal(err)
		}
		if i := strings.Index(string(b), "INDEX rollouts_one_in_progress"); i >= 0 {
			stmt := string(b[i:])
			last, index = f, strings.Join(strings.Fields(stmt[:strings.Index(stmt, ";")]), " ")
		}
	}
	if last == "" {
		t.Fatal("no migration creates rollouts_one_in_progress")
	}
	if !strings.HasSuffix(index, "WHERE state IN "+inProgressStates) {
		t.Fatalf("%s: %q does not list %s", last, index, inProgressStates)
	}
}
