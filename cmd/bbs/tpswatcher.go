package main

import (
	"context"
	"errors"
	"flag"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/tpswatcher"
)

// runTPSWatcherCommand runs the tps-watcher.
func runTPSWatcherCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tps-watcher", flag.ContinueOnError)
	apiURL := fs.String("api-url", envOr("BBS_API_URL", "http://127.0.0.1:8889"), "the BBS API [BBS_API_URL]")
	ccURL := fs.String("cc-url", envOr("BBS_CC_INTERNAL_URL", ""), "Cloud Controller's internal API, e.g. https://cloud-controller-ng.service.cf.internal:9023 [BBS_CC_INTERNAL_URL]")
	var ccTLS clientTLSFlags
	fs.StringVar(&ccTLS.caFile, "cc-ca", envOr("BBS_CC_CA_FILE", ""), "CA of Cloud Controller's certificate (PEM) [BBS_CC_CA_FILE]")
	fs.StringVar(&ccTLS.certFile, "cc-client-cert", envOr("BBS_CC_CLIENT_CERT_FILE", ""), "client certificate for Cloud Controller (PEM) [BBS_CC_CLIENT_CERT_FILE]")
	fs.StringVar(&ccTLS.keyFile, "cc-client-key", envOr("BBS_CC_CLIENT_KEY_FILE", ""), "client private key for Cloud Controller (PEM) [BBS_CC_CLIENT_KEY_FILE]")
	logLevel := logLevelFlag(fs)
	metricsOpts := registerMetrics(fs, tpsWatcherMetricsAddr, nil)
	var peerTLS clientTLSFlags
	peerTLS.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ccURL == "" {
		return errors.New("--cc-url (or BBS_CC_INTERNAL_URL) is required")
	}
	log, err := newLogger(*logLevel, false)
	if err != nil {
		return err
	}
	defer log.Sync()
	_, stopMetrics, err := metricsOpts.start(log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	apiTLS, err := peerTLS.config()
	if err != nil {
		return err
	}
	ccTLSConfig, err := ccTLS.config()
	if err != nil {
		return err
	}
	w := system.StartTPSWatcher(ctx, system.TPSWatcherConfig{BBS: bbsclient.New(*apiURL, apiTLS),
		CC: tpswatcher.NewCCClient(*ccURL, ccTLSConfig), Log: log})
	<-ctx.Done()
	w.Stop()
	return nil
}
