package main

import (
	"context"

	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/system"
)

// runAPICommand serves the JSON API and the BBS protocol over the store, starting and
// signalling rollouts on Temporal and stopping instances on their cells.
func runAPICommand(ctx context.Context, args []string) error {
	cmd := boot.NewCommand("api")
	fs := cmd.Flags
	listenAddr := fs.String("listen", boot.EnvOr("BBS_LISTEN_ADDR", "127.0.0.1:8889"), "address to serve the API on [BBS_LISTEN_ADDR]")
	protocolAddr := protocolListenFlag(fs)
	cmd.ServerTLS()
	cmd.Metrics("")
	cmd.PeerTLS()
	cmd.Store()
	var tf temporalFlags
	tf.register(fs)
	var rf rolloutFlags
	rf.register(fs)
	p, err := cmd.Start(ctx, args)
	if err != nil {
		return err
	}
	defer p.Close()
	tcfg, err := tf.config()
	if err != nil {
		return err
	}
	temporal, err := system.LazyTemporal(tcfg, p.Log)
	if err != nil {
		return err
	}
	defer temporal.Close()
	ro, err := rf.options()
	if err != nil {
		return err
	}
	a, err := boot.StartAPI(ctx, p.Store, *listenAddr, *protocolAddr, p.ServerTLS, system.APIConfig{
		Cells: cellapi.NewClient(p.PeerTLS), Temporal: temporal, Rollouts: ro, Metrics: p.Metrics, Log: p.Log})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return a.Stop()
}

// runMigrateCommand applies the database migrations and exits.
func runMigrateCommand(ctx context.Context, args []string) error {
	cmd := boot.NewCommand("migrate")
	cmd.Store()
	p, err := cmd.Start(ctx, args)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.Store.Migrate(ctx); err != nil {
		return err
	}
	p.Log.Info("migrations applied")
	return nil
}
