package boot

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/protocol"
	"go.uber.org/zap"
)

// OpenStore connects to the database, retrying for a while: in a stack started all at once,
// PostgreSQL may come up after us.
// BBS_DB_JIT says how the sessions turn JIT off (db.JITMode); BBS_DB_STATEMENT_CACHE=off
// leaves the store's queries unprepared (for a pooler in transaction mode).
func OpenStore(ctx context.Context, url string, log *zap.Logger) (*db.Store, error) {
	jit, err := db.ParseJITMode(os.Getenv("BBS_DB_JIT"))
	if err != nil {
		return nil, fmt.Errorf("BBS_DB_JIT: %w", err)
	}
	prepare, err := db.ParseStatementCache(os.Getenv("BBS_DB_STATEMENT_CACHE"))
	if err != nil {
		return nil, fmt.Errorf("BBS_DB_STATEMENT_CACHE: %w", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		store, err := db.Open(attemptCtx, url, db.WithLogger(log), db.WithJIT(jit), db.WithStatementCache(prepare),
			db.WithProtobufPatcher(protocol.PatchDefinitionProtobuf))
		cancel()
		if err == nil {
			return store, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		log.Info("waiting for the database", zap.Error(err))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// OpenStoreFromEnv connects to the database named by DATABASE_URL (or DATABASE_URL_FILE).
func OpenStoreFromEnv(ctx context.Context, log *zap.Logger) (*db.Store, error) {
	url, err := RequireDatabaseURL()
	if err != nil {
		return nil, err
	}
	return OpenStore(ctx, url, log)
}

// RedactURL hides a password in a database URL, so that the stacks' banners can show which
// database they use.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable DATABASE_URL)"
	}
	return u.Redacted()
}
