package main

import (
	"context"
	"errors"
	"flag"
	"strings"

	"github.com/updatable-lrps/bbs/internal/lb"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/protocol"
	"go.uber.org/zap"
)

// runLBCommand runs the load-balancing front of several API replicas: one address for the
// JSON API and one for the BBS protocol, each handing connections round robin to the
// replicas that answer.
func runLBCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("lb", flag.ContinueOnError)
	apiListen := fs.String("listen", envOr("BBS_LB_LISTEN_ADDR", "127.0.0.1:8889"), "the front of the JSON API [BBS_LB_LISTEN_ADDR]")
	apiBackends := fs.String("backends", envOr("BBS_LB_BACKENDS", ""), "the API replicas' JSON API addresses, host:port,host:port [BBS_LB_BACKENDS]")
	protocolListen := fs.String("bbs-listen", envOr("BBS_LB_PROTOCOL_LISTEN_ADDR", "127.0.0.1:8890"), "the front of the BBS protocol; empty: none [BBS_LB_PROTOCOL_LISTEN_ADDR]")
	protocolBackends := fs.String("bbs-backends", envOr("BBS_LB_PROTOCOL_BACKENDS", ""), "the API replicas' BBS-protocol addresses [BBS_LB_PROTOCOL_BACKENDS]")
	logLevel := logLevelFlag(fs)
	var serverTLS tlsFlags
	serverTLS.register(fs)
	metricsOpts := registerMetrics(fs, lbMetricsAddr, &serverTLS)
	var backendTLS clientTLSFlags
	backendTLS.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, false)
	if err != nil {
		return err
	}
	defer log.Sync()
	if *apiBackends == "" {
		return errors.New("--backends (BBS_LB_BACKENDS) is empty")
	}
	listenTLS, err := serverTLS.serverConfig()
	if err != nil {
		return err
	}
	dialTLS, err := backendTLS.config()
	if err != nil {
		return err
	}
	if (listenTLS == nil) != (dialTLS == nil) {
		// Terminating TLS and passing plain text on (or the reverse) would expose the API.
		return errors.New("mutual TLS on one side only: set both the BBS_TLS_* files (clients) and the BBS_PEER_CA_FILE/BBS_CLIENT_* files (replicas), or neither")
	}
	_, stopMetrics, err := metricsOpts.start(log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	fronts := []*lb.Front{}
	ln, _, err := system.Listen(*apiListen, listenTLS)
	if err != nil {
		return err
	}
	fronts = append(fronts, &lb.Front{Name: "api", Listener: ln, Backends: splitList(*apiBackends), BackendTLS: dialTLS, Log: log})
	if *protocolListen != "" {
		if *protocolBackends == "" {
			ln.Close()
			return errors.New("--bbs-backends (BBS_LB_PROTOCOL_BACKENDS) is empty; set --bbs-listen empty for no BBS-protocol front")
		}
		pln, _, err := system.Listen(*protocolListen, protocol.TLSConfig(listenTLS))
		if err != nil {
			ln.Close()
			return err
		}
		fronts = append(fronts, &lb.Front{Name: "bbs-protocol", Listener: pln, Backends: splitList(*protocolBackends), BackendTLS: dialTLS, Log: log})
	}
	// One front failing stops the other: the process is one unit to supervise.
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
