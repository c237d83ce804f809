package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/protocol"
	"go.uber.org/zap"
)

func runAPICommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	listenAddr := fs.String("listen", envOr("BBS_LISTEN_ADDR", "127.0.0.1:8889"), "address to serve the API on [BBS_LISTEN_ADDR]")
	protocolAddr := protocolListenFlag(fs)
	logLevel := logLevelFlag(fs)
	var tlsOpts tlsFlags
	tlsOpts.register(fs)
	metricsOpts := registerMetrics(fs, "", &tlsOpts)
	var peerTLS clientTLSFlags
	peerTLS.register(fs)
	var tf temporalFlags
	tf.register(fs)
	var rf rolloutFlags
	rf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, false)
	if err != nil {
		return err
	}
	defer log.Sync()
	reg, stopMetrics, err := metricsOpts.start(log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	store, err := openStoreFromEnv(ctx, log)
	if err != nil {
		return err
	}
	defer store.Close()
	cellTLS, err := peerTLS.config()
	if err != nil {
		return err
	}
	tcfg, err := tf.config()
	if err != nil {
		return err
	}
	temporal, err := system.LazyTemporal(tcfg, log)
	if err != nil {
		return err
	}
	defer temporal.Close()
	ro, err := rf.options()
	if err != nil {
		return err
	}
	a, err := startAPI(ctx, store, *listenAddr, *protocolAddr, tlsOpts, system.APIConfig{
		Cells: cellapi.NewClient(cellTLS), Temporal: temporal, Rollouts: ro, Metrics: reg, Log: log})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return a.Stop()
}

// protocolListenFlag registers --bbs-listen, where the BBS's own protocol is served.
func protocolListenFlag(fs *flag.FlagSet) *string {
	return fs.String("bbs-listen", envOr("BBS_PROTOCOL_LISTEN_ADDR", "127.0.0.1:8890"), "address to serve the BBS protocol (protobuf, for Diego and Cloud Foundry clients) on; empty: not served [BBS_PROTOCOL_LISTEN_ADDR]")
}

// startAPI listens on addr, and on protocolAddr unless it is empty (mutual TLS beyond
// loopback), and starts the API of cfg there.
func startAPI(ctx context.Context, store *db.Store, addr, protocolAddr string, tlsOpts tlsFlags, cfg system.APIConfig) (*system.API, error) {
	serverTLS, err := tlsOpts.serverConfig()
	if err != nil {
		return nil, err
	}
	ln, scheme, err := system.Listen(addr, serverTLS)
	if err != nil {
		return nil, err
	}
	cfg.Store, cfg.Listener, cfg.Scheme = store, ln, scheme
	if protocolAddr != "" {
		if cfg.ProtocolListener, cfg.ProtocolScheme, err = system.Listen(protocolAddr, protocol.TLSConfig(serverTLS)); err != nil {
			ln.Close()
			return nil, err
		}
	}
	return system.StartAPI(ctx, cfg)
}

// openStore connects to the database, retrying for a while: in a stack started all at once,
// PostgreSQL may come up after us.
// BBS_DB_JIT says how the sessions turn JIT off (db.JITMode); BBS_DB_STATEMENT_CACHE=off
// leaves the store's queries unprepared (for a pooler in transaction mode).
func openStore(ctx context.Context, url string, log *zap.Logger) (*db.Store, error) {
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
		store, err := db.Open(attemptCtx, url, db.WithLogger(log), db.WithJIT(jit), db.WithStatementCache(prepare))
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

func runMigrateCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	logLevel := logLevelFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, false)
	if err != nil {
		return err
	}
	store, err := openStoreFromEnv(ctx, log)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	log.Info("migrations applied")
	return nil
}
