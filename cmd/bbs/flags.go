package main

import (
	"flag"
	"fmt"
	"net/url"
	"time"

	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/workflows"
)

// temporalFlags say where the Temporal frontend is and, when it requires mutual TLS, what
// to present to it. The variables are the ones the temporal CLI reads, so that one
// environment configures both.
type temporalFlags struct {
	address, namespace string
	tls                boot.ClientTLS
	compression        string
}

// register registers the --temporal-* flags on fs.
func (t *temporalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.address, "temporal-address", boot.EnvOr("TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port [TEMPORAL_ADDRESS]")
	fs.StringVar(&t.namespace, "temporal-namespace", boot.EnvOr("TEMPORAL_NAMESPACE", "default"), "Temporal namespace [TEMPORAL_NAMESPACE]")
	fs.StringVar(&t.tls.CAFile, "temporal-tls-ca", boot.EnvOr("TEMPORAL_TLS_CA", ""), "CA of the Temporal frontend's certificate (PEM) [TEMPORAL_TLS_CA]")
	fs.StringVar(&t.tls.CertFile, "temporal-tls-cert", boot.EnvOr("TEMPORAL_TLS_CERT", ""), "client certificate for the Temporal frontend (PEM) [TEMPORAL_TLS_CERT]")
	fs.StringVar(&t.tls.KeyFile, "temporal-tls-key", boot.EnvOr("TEMPORAL_TLS_KEY", ""), "client private key for the Temporal frontend (PEM) [TEMPORAL_TLS_KEY]")
	fs.StringVar(&t.compression, "temporal-compression", boot.EnvOr("BBS_TEMPORAL_COMPRESSION", "none"), "gRPC compression of calls to the Temporal frontend: none, or gzip for a slow link (CPU on both sides) [BBS_TEMPORAL_COMPRESSION]")
}

// config is the Temporal client configuration the flags make.
func (t temporalFlags) config() (system.TemporalConfig, error) {
	tlsConfig, err := t.tls.Config()
	if err != nil {
		return system.TemporalConfig{}, fmt.Errorf("Temporal TLS: %w", err)
	}
	if t.compression != "none" && t.compression != "gzip" {
		return system.TemporalConfig{}, fmt.Errorf("--temporal-compression %q: none or gzip", t.compression)
	}
	return system.TemporalConfig{Address: t.address, Namespace: t.namespace, TLS: tlsConfig, Gzip: t.compression == "gzip"}, nil
}

// rolloutFlags tune the rollouts this process starts (the API) or resumes (the worker).
type rolloutFlags struct {
	maxInFlight     int
	indexDeadline   time.Duration
	analysisWebhook string
}

// register registers the --rollout-* flags on fs.
func (r *rolloutFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&r.maxInFlight, "rollout-max-in-flight", boot.EnvInt("BBS_ROLLOUT_MAX_IN_FLIGHT", 1), "the default max_in_flight of rollout strategies: indices a rollout replaces at once (1 as in Cloud Foundry) [BBS_ROLLOUT_MAX_IN_FLIGHT]")
	fs.StringVar(&r.analysisWebhook, "rollout-analysis-webhook", boot.EnvOr("BBS_ROLLOUT_ANALYSIS_WEBHOOK", ""), "an HTTP endpoint canary analysis also asks for a verdict on each window (POST of the window as JSON, answer {\"verdict\", \"reason\"}; the worst verdict wins); empty: the routers' telemetry alone [BBS_ROLLOUT_ANALYSIS_WEBHOOK]")
	fs.DurationVar(&r.indexDeadline, "rollout-index-deadline", boot.EnvDuration("BBS_ROLLOUT_INDEX_DEADLINE", workflows.DefaultIndexDeadline), "the default index_deadline_ms of rollout strategies: how long a new instance may take to be RUNNING and ready before its index has failed [BBS_ROLLOUT_INDEX_DEADLINE]")
}

// options are the rollout options the flags make.
func (r rolloutFlags) options() (system.RolloutOptions, error) {
	if r.analysisWebhook != "" {
		u, err := url.Parse(r.analysisWebhook)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return system.RolloutOptions{}, fmt.Errorf("--rollout-analysis-webhook %q is not an http(s) URL", r.analysisWebhook)
		}
	}
	return system.RolloutOptions{MaxInFlight: r.maxInFlight, IndexDeadline: r.indexDeadline, AnalysisWebhook: r.analysisWebhook}, nil
}

// protocolListenFlag registers --bbs-listen, where the BBS's own protocol is served.
func protocolListenFlag(fs *flag.FlagSet) *string {
	return fs.String("bbs-listen", boot.EnvOr("BBS_PROTOCOL_LISTEN_ADDR", "127.0.0.1:8890"), "address to serve the BBS protocol (protobuf, for Diego and Cloud Foundry clients) on; empty: not served [BBS_PROTOCOL_LISTEN_ADDR]")
}
