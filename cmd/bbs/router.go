package main

import (
	"context"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/model"
)

// runRouterCommand runs the router and its route emitter.
func runRouterCommand(ctx context.Context, args []string) error {
	cmd := boot.NewCommand("router")
	fs := cmd.Flags
	listenAddr := fs.String("listen", boot.EnvOr("BBS_ROUTER_LISTEN_ADDR", "127.0.0.1:8080"), "where apps are served, by Host header [BBS_ROUTER_LISTEN_ADDR]")
	adminAddr := fs.String("admin-listen", boot.EnvOr("BBS_ROUTER_ADMIN_ADDR", "127.0.0.1:8081"), "GET /stats (loopback only) [BBS_ROUTER_ADMIN_ADDR]")
	apiURL := fs.String("api-url", boot.EnvOr("BBS_API_URL", "http://127.0.0.1:8889"), "the BBS API [BBS_API_URL]")
	id := fs.String("id", boot.EnvOr("BBS_ROUTER_ID", ""), "the router's name in its reports to the BBS, unique among routers (default: host name and app port) [BBS_ROUTER_ID]")
	cmd.Check(func() error {
		if *id == "" {
			return nil
		}
		return model.ValidateRouterID(*id)
	})
	cmd.Metrics("")
	cmd.PeerTLS()
	p, err := cmd.Start(ctx, args)
	if err != nil {
		return err
	}
	defer p.Close()
	r, err := system.StartRouter(ctx, system.RouterConfig{Listen: *listenAddr, Admin: *adminAddr,
		BBS: bbsclient.New(*apiURL, p.PeerTLS), Metrics: p.Metrics, Log: p.Log, ID: *id})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return r.Stop()
}
