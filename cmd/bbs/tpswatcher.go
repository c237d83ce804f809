package main

import (
	"context"
	"errors"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/tpswatcher"
)

// runTPSWatcherCommand runs the tps-watcher.
func runTPSWatcherCommand(ctx context.Context, args []string) error {
	cmd := boot.NewCommand("tps-watcher")
	fs := cmd.Flags
	apiURL := fs.String("api-url", boot.EnvOr("BBS_API_URL", "http://127.0.0.1:8889"), "the BBS API [BBS_API_URL]")
	ccURL := fs.String("cc-url", boot.EnvOr("BBS_CC_INTERNAL_URL", ""), "Cloud Controller's internal API, e.g. https://cloud-controller-ng.service.cf.internal:9023 [BBS_CC_INTERNAL_URL]")
	var ccTLS boot.ClientTLS
	fs.StringVar(&ccTLS.CAFile, "cc-ca", boot.EnvOr("BBS_CC_CA_FILE", ""), "CA of Cloud Controller's certificate (PEM) [BBS_CC_CA_FILE]")
	fs.StringVar(&ccTLS.CertFile, "cc-client-cert", boot.EnvOr("BBS_CC_CLIENT_CERT_FILE", ""), "client certificate for Cloud Controller (PEM) [BBS_CC_CLIENT_CERT_FILE]")
	fs.StringVar(&ccTLS.KeyFile, "cc-client-key", boot.EnvOr("BBS_CC_CLIENT_KEY_FILE", ""), "client private key for Cloud Controller (PEM) [BBS_CC_CLIENT_KEY_FILE]")
	cmd.Metrics(tpsWatcherMetricsAddr)
	cmd.PeerTLS()
	cmd.Check(func() error {
		if *ccURL == "" {
			return errors.New("--cc-url (or BBS_CC_INTERNAL_URL) is required")
		}
		return nil
	})
	p, err := cmd.Start(ctx, args)
	if err != nil {
		return err
	}
	defer p.Close()
	ccTLSConfig, err := ccTLS.Config()
	if err != nil {
		return err
	}
	w := system.StartTPSWatcher(ctx, system.TPSWatcherConfig{BBS: bbsclient.New(*apiURL, p.PeerTLS),
		CC: tpswatcher.NewCCClient(*ccURL, ccTLSConfig), Log: p.Log})
	<-ctx.Done()
	w.Stop()
	return nil
}
