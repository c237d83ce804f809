package db

import (
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
)

// SchemaNewerError is why a BBS refuses to start on a database a newer release has migrated:
// it cannot know what the newer migrations changed, so it does not guess. Without it the
// migration library's own words reach the operator ("no migration found for version 23: read
// down for version 23 .: file does not exist"), which do not say what to do.
type SchemaNewerError struct {
	// Database is the schema version the database is at; Known the newest this build has.
	Database, Known uint
}

func (e *SchemaNewerError) Error() string {
	return fmt.Sprintf("the database's schema is at version %d, newer than this build's %d: a newer BBS release migrated it, "+
		"and this build refuses to run on a schema it does not know; run that release or a newer one (docs/OPERATING.md, \"Upgrades\")",
		e.Database, e.Known)
}

var migrationName = regexp.MustCompile(`^(\d+)_.*\.up\.sql$`)

// latestMigration is the newest version among the embedded migrations.
func latestMigration() (uint, error) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return 0, err
	}
	var latest uint
	for _, e := range entries {
		if m := migrationName.FindStringSubmatch(e.Name()); m != nil {
			v, err := strconv.ParseUint(m[1], 10, 32)
			if err != nil {
				return 0, fmt.Errorf("migration %s: %w", e.Name(), err)
			}
			latest = max(latest, uint(v))
		}
	}
	return latest, nil
}

// schemaNewer explains a failed migration when the database is at a version this build does
// not have (nil when it is not).
func schemaNewer(at uint) error {
	known, err := latestMigration()
	if err != nil || at <= known {
		return nil
	}
	return &SchemaNewerError{Database: at, Known: known}
}
