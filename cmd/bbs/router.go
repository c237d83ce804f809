package main

import (
	"context"
	"flag"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/internal/system"
)

// runRouterCommand runs the router and its route emitter.
func runRouterCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("router", flag.ContinueOnError)
	listenAddr := fs.String("listen", envOr("BBS_ROUTER_LISTEN_ADDR", "127.0.0.1:8080"), "where apps are served, by Host header [BBS_ROUTER_LISTEN_ADDR]")
	adminAddr := fs.String("admin-listen", envOr("BBS_ROUTER_ADMIN_ADDR", "127.0.0.1:8081"), "GET /stats (loopback only) [BBS_ROUTER_ADMIN_ADDR]")
	apiURL := fs.String("api-url", envOr("BBS_API_URL", "http://127.0.0.1:8889"), "the BBS API [BBS_API_URL]")
	logLevel := logLevelFlag(fs)
	metricsOpts := registerMetrics(fs, "", nil)
	var peerTLS clientTLSFlags
	peerTLS.register(fs)
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
	apiTLS, err := peerTLS.config()
	if err != nil {
		return err
	}
	r, err := system.StartRouter(ctx, system.RouterConfig{Listen: *listenAddr, Admin: *adminAddr,
		BBS: bbsclient.New(*apiURL, apiTLS), Metrics: reg, Log: log})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return r.Stop()
}
