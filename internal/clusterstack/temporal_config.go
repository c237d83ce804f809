package clusterstack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/updatable-lrps/bbs/internal/temporaldev"
)

// temporalPorts are the ports of the one server process's four services. The frontend's
// gRPC port is the public one; the others are internal.
type temporalPorts struct {
	frontend, frontendHTTP, history, matching, worker int
	// membership ports (ringpop), one per service, in the order above without the HTTP one
	mFrontend, mHistory, mMatching, mWorker int
}

// newTemporalPorts places the internal ports from base (base+50 to base+63).
func newTemporalPorts(frontend, base int) temporalPorts {
	return temporalPorts{frontend: frontend, frontendHTTP: base + 50, history: base + 51, matching: base + 52, worker: base + 53,
		mFrontend: base + 60, mHistory: base + 61, mMatching: base + 62, mWorker: base + 63}
}

// writeTemporalConfig writes the server's configuration (<dir>/cluster.yaml), with tls as its
// global.tls section, and its dynamic config (<dir>/dynamicconfig.yaml,
// temporaldev.DynamicConfig, as every server we start has).
func writeTemporalConfig(dir string, pgPort int, p temporalPorts, shards int, tls string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dcFile := filepath.Join(dir, "dynamicconfig.yaml")
	if err := os.WriteFile(dcFile, []byte(dynamicConfigYAML()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(serverConfigYAML(pgPort, p, shards, tls, dcFile)), 0o644)
}

// dynamicConfigYAML is temporaldev.DynamicConfig in the server's dynamic-config format.
func dynamicConfigYAML() string {
	var dc strings.Builder
	dc.WriteString("# Written by `bbs cluster` on every start (temporaldev.DynamicConfig).\n")
	for _, kv := range temporaldev.DynamicConfig {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&dc, "%s:\n  - value: %s\n    constraints: {}\n", k, v)
	}
	return dc.String()
}

// storeYAML is a datastore of the server's persistence: db in the cluster's PostgreSQL.
func storeYAML(db string, pgPort, conns int) string {
	return fmt.Sprintf(`      sql:
        pluginName: postgres12
        databaseName: %s
        connectAddr: 127.0.0.1:%d
        connectProtocol: tcp
        user: postgres
        maxConns: %d
        maxIdleConns: %d
        maxConnLifetime: 1h
`, db, pgPort, conns, conns)
}

// serviceYAML is a service's rpc section: its gRPC, membership and (the frontend's only)
// HTTP port, on 127.0.0.1.
func serviceYAML(grpc, membership, http int) string {
	s := fmt.Sprintf("    rpc:\n      grpcPort: %d\n      membershipPort: %d\n      bindOnIP: 127.0.0.1\n", grpc, membership)
	if http != 0 {
		s += fmt.Sprintf("      httpPort: %d\n", http)
	}
	return s
}

// serverConfigYAML is the server's configuration: its stores, tls as its global.tls
// section, its four services on the ports p, and its dynamic config read from dcFile.
func serverConfigYAML(pgPort int, p temporalPorts, shards int, tls, dcFile string) string {
	return fmt.Sprintf(serverConfigTemplate, shards, storeYAML("temporal", pgPort, 20), storeYAML("temporal_visibility", pgPort, 10), tls,
		serviceYAML(p.frontend, p.mFrontend, p.frontendHTTP), serviceYAML(p.history, p.mHistory, 0),
		serviceYAML(p.matching, p.mMatching, 0), serviceYAML(p.worker, p.mWorker, 0),
		p.frontend, p.frontendHTTP, p.frontend, dcFile)
}

// serverConfigTemplate is the server's configuration with its variable parts as verbs.
const serverConfigTemplate = `# Written by ` + "`bbs cluster`" + ` on every start: the real Temporal server on the cluster's
# PostgreSQL, all four services in one process, listening on 127.0.0.1 only, mutual TLS
# on every gRPC and HTTP port.
log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: %d
  datastores:
    default:
%s    visibility:
%sglobal:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
%sservices:
  frontend:
%s  history:
%s  matching:
%s  worker:
%sclusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:%d
      httpAddress: 127.0.0.1:%d
dcRedirectionPolicy:
  policy: noop
archival:
  history:
    state: disabled
  visibility:
    state: disabled
namespaceDefaults:
  archival:
    history:
      state: disabled
    visibility:
      state: disabled
publicClient:
  hostPort: 127.0.0.1:%d
dynamicConfigClient:
  filepath: %s
  pollInterval: 10s
`
