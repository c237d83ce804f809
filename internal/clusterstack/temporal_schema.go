package clusterstack

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"go.uber.org/zap"
)

// temporalDatabases are the databases of Temporal's two stores, beside the BBS's in the same
// PostgreSQL cluster, and the schemas (embedded in the server) the SQL tool applies to them.
var temporalDatabases = []struct{ name, schema string }{
	{"temporal", "postgresql/v12/temporal"},
	{"temporal_visibility", "postgresql/v12/visibility"},
}

// applyTemporalSchema brings Temporal's databases to the schema of the server build, with the
// server's own SQL tool: setup-schema the first time (it creates the version table; run
// again it would reset the recorded version), then update-schema, which does nothing when the
// schema is current.
func applyTemporalSchema(ctx context.Context, bin string, pgPort int, pgURL func(string) string, logFile string, log *zap.Logger) error {
	for _, d := range temporalDatabases {
		set, err := hasSchemaVersion(ctx, pgURL(d.name))
		if err != nil {
			return err
		}
		common := []string{"sql-tool", "--plugin", "postgres12", "--ep", "127.0.0.1", "--port", fmt.Sprint(pgPort),
			"--user", "postgres", "--db", d.name}
		if !set {
			log.Info("setting up Temporal's schema", zap.String("database", d.name))
			if err := runTool(ctx, bin, logFile, append(common, "setup-schema", "--version", "0.0")...); err != nil {
				return err
			}
		}
		if err := runTool(ctx, bin, logFile, append(common, "update-schema", "--schema-name", d.schema)...); err != nil {
			return err
		}
	}
	return nil
}

// hasSchemaVersion says whether the SQL tool has set up the database (its version table).
func hasSchemaVersion(ctx context.Context, url string) (bool, error) {
	db, err := sql.Open("postgres", url)
	if err != nil {
		return false, err
	}
	defer db.Close()
	var exists bool
	err = db.QueryRowContext(ctx, `SELECT to_regclass('public.schema_version') IS NOT NULL`).Scan(&exists)
	return exists, err
}

// runTool runs the server binary's SQL tool, its output appended to logFile.
func runTool(ctx context.Context, bin, logFile string, args ...string) error {
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(f, "\n$ temporal-server %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("temporal-server %s %s: %w (log: %s)", args[len(args)-3], args[len(args)-1], err, logFile)
	}
	return nil
}
