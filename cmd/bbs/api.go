package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/cell"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/events"
	"go.uber.org/zap"
)

func runAPICommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	listenAddr := fs.String("listen", envOr("BBS_LISTEN_ADDR", "127.0.0.1:8889"), "address to serve the API on [BBS_LISTEN_ADDR]")
	logLevel := logLevelFlag(fs)
	var tlsOpts tlsFlags
	tlsOpts.register(fs)
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
	store, err := openStoreFromEnv(ctx, log)
	if err != nil {
		return err
	}
	defer store.Close()
	cellTLS, err := peerTLS.config()
	if err != nil {
		return err
	}
	temporal, err := tf.lazyClient(log)
	if err != nil {
		return err
	}
	defer temporal.Close()
	a, err := startAPI(ctx, store, *listenAddr, tlsOpts, cell.NewClient(cellTLS), rf.client(temporal), log)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return a.stop()
}

// openStore connects to the database, retrying for a while: in a stack started all at once,
// PostgreSQL may come up after us.
func openStore(ctx context.Context, url string, log *zap.Logger) (*db.Store, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		store, err := db.Open(attemptCtx, url, db.WithLogger(log))
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

// runningAPI is an API server being served.
type runningAPI struct {
	http *http.Server
	addr net.Addr
	tls  bool
	done chan error
}

// startAPI serves the API on addr. It answers Unavailable until the migrations, which it
// applies under an advisory lock, are in place.
func startAPI(ctx context.Context, store *db.Store, addr string, tlsOpts tlsFlags, cells *cell.Client, rollouts api.Rollouts, log *zap.Logger) (*runningAPI, error) {
	ln, isTLS, err := listen(addr, tlsOpts)
	if err != nil {
		return nil, err
	}
	hub := events.NewHub(store, store.Notifications(), events.Options{}, log)
	stopper := &cell.Stopper{Cells: store, Client: cells}
	server := api.NewServer(store, stopper, log).WithEvents(hub).
		WithRollouts(rollouts)
	a := &runningAPI{
		http: &http.Server{
			Handler:           server,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			IdleTimeout:       2 * time.Minute,
		},
		addr: ln.Addr(),
		tls:  isTLS,
		done: make(chan error, 1),
	}
	go func() {
		if err := a.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.done <- err
		}
		close(a.done)
	}()
	if err := store.Migrate(ctx); err != nil {
		a.stop()
		return nil, err
	}
	go func() {
		if err := hub.Run(ctx); err != nil {
			log.Error("event hub stopped", zap.Error(err))
		}
	}()
	server.MarkReady()
	log.Info("api listening", zap.String("address", a.url()))
	return a, nil
}

func (a *runningAPI) url() string {
	scheme := "http"
	if a.tls {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s", scheme, a.addr)
}

func (a *runningAPI) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := a.http.Shutdown(ctx)
	if serveErr := <-a.done; serveErr != nil {
		return serveErr
	}
	return err
}

func runMigrateCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger("info", false)
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
