package main

import (
	"context"
	"errors"
	"strings"

	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/lb"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/protocol"
	"go.uber.org/zap"
)

// runLBCommand runs the load-balancing front of several API replicas: one address for the
// JSON API and one for the BBS protocol, each handing connections round robin to the
// replicas that answer.
func runLBCommand(ctx context.Context, args []string) error {
	cmd := boot.NewCommand("lb")
	fs := cmd.Flags
	apiListen := fs.String("listen", boot.EnvOr("BBS_LB_LISTEN_ADDR", "127.0.0.1:8889"), "the front of the JSON API [BBS_LB_LISTEN_ADDR]")
	apiBackends := fs.String("backends", boot.EnvOr("BBS_LB_BACKENDS", ""), "the API replicas' JSON API addresses, host:port,host:port [BBS_LB_BACKENDS]")
	protocolListen := fs.String("bbs-listen", boot.EnvOr("BBS_LB_PROTOCOL_LISTEN_ADDR", "127.0.0.1:8890"), "the front of the BBS protocol; empty: none [BBS_LB_PROTOCOL_LISTEN_ADDR]")
	protocolBackends := fs.String("bbs-backends", boot.EnvOr("BBS_LB_PROTOCOL_BACKENDS", ""), "the API replicas' BBS-protocol addresses [BBS_LB_PROTOCOL_BACKENDS]")
	cmd.ServerTLS()
	cmd.Metrics(lbMetricsAddr)
	cmd.PeerTLS()
	cmd.Check(func() error {
		if *apiBackends == "" {
			return errors.New("--backends (BBS_LB_BACKENDS) is empty")
		}
		return nil
	})
	p, err := cmd.Start(ctx, args)
	if err != nil {
		return err
	}
	defer p.Close()
	if (p.ServerTLS == nil) != (p.PeerTLS == nil) {
		// Terminating TLS and passing plain text on (or the reverse) would expose the API.
		return errors.New("mutual TLS on one side only: set both the BBS_TLS_* files (clients) and the BBS_PEER_CA_FILE/BBS_CLIENT_* files (replicas), or neither")
	}
	fronts, err := listenFronts(p, *apiListen, *apiBackends, *protocolListen, *protocolBackends)
	if err != nil {
		return err
	}
	return serveFronts(ctx, fronts, p.Log)
}

// listenFronts listens for the JSON API's front and, unless protocolListen is empty, the BBS
// protocol's, with the replicas each hands connections to.
func listenFronts(p *boot.Process, apiListen, apiBackends, protocolListen, protocolBackends string) ([]*lb.Front, error) {
	ln, _, err := system.Listen(apiListen, p.ServerTLS)
	if err != nil {
		return nil, err
	}
	fronts := []*lb.Front{{Name: "api", Listener: ln, Backends: splitList(apiBackends), BackendTLS: p.PeerTLS, Log: p.Log}}
	if protocolListen == "" {
		return fronts, nil
	}
	if protocolBackends == "" {
		ln.Close()
		return nil, errors.New("--bbs-backends (BBS_LB_PROTOCOL_BACKENDS) is empty; set --bbs-listen empty for no BBS-protocol front")
	}
	pln, _, err := system.Listen(protocolListen, protocol.TLSConfig(p.ServerTLS))
	if err != nil {
		ln.Close()
		return nil, err
	}
	return append(fronts, &lb.Front{Name: "bbs-protocol", Listener: pln, Backends: splitList(protocolBackends), BackendTLS: p.PeerTLS, Log: p.Log}), nil
}

// serveFronts serves the fronts until ctx is done. One front failing stops the other: the
// process is one unit to supervise.
func serveFronts(ctx context.Context, fronts []*lb.Front, log *zap.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(fronts))
	for _, f := range fronts {
		log.Info("load balancing", zap.String("front", f.Name), zap.String("listen", f.Listener.Addr().String()), zap.Strings("backends", f.Backends))
		go func() { err := f.Serve(ctx); cancel(); errs <- err }()
	}
	var all []error
	for range fronts {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// splitList splits a comma-separated list, dropping empty items and spaces.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
