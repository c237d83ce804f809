package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/internal/gctune"
	"github.com/updatable-lrps/bbs/internal/supervise"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/durationpb"
)

// temporalPorts are the ports of the one server process's four services. The frontend's
// gRPC port is the public one; the others are internal.
type temporalPorts struct {
	frontend, frontendHTTP, history, matching, worker int
	// membership ports (ringpop), one per service, in the order above without the HTTP one
	mFrontend, mHistory, mMatching, mWorker int
}

func newTemporalPorts(frontend, base int) temporalPorts {
	return temporalPorts{frontend: frontend, frontendHTTP: base + 50, history: base + 51, matching: base + 52, worker: base + 53,
		mFrontend: base + 60, mHistory: base + 61, mMatching: base + 62, mWorker: base + 63}
}

// temporalDatabases are the databases of Temporal's two stores, beside the BBS's in the same
// PostgreSQL cluster, and the schemas (embedded in the server) the SQL tool applies to them.
var temporalDatabases = []struct{ name, schema string }{
	{"temporal", "postgresql/v12/temporal"},
	{"temporal_visibility", "postgresql/v12/visibility"},
}

// applyTemporalSchema brings Temporal's databases to the schema of the server build, with the
// server's own SQL tool: setup-schema the first time (it creates the version table; run
// again it would reset the recorded version), then update-schema, which does nothing when the
// schema is current.
func applyTemporalSchema(ctx context.Context, bin string, pgPort int, pgURL func(string) string, logFile string, log *zap.Logger) error {
	for _, d := range temporalDatabases {
		set, err := hasSchemaVersion(ctx, pgURL(d.name))
		if err != nil {
			return err
		}
		common := []string{"sql-tool", "--plugin", "postgres12", "--ep", "127.0.0.1", "--port", fmt.Sprint(pgPort),
			"--user", "postgres", "--db", d.name}
		if !set {
			log.Info("setting up Temporal's schema", zap.String("database", d.name))
			if err := runTool(ctx, bin, logFile, append(common, "setup-schema", "--version", "0.0")...); err != nil {
				return err
			}
		}
		if err := runTool(ctx, bin, logFile, append(common, "update-schema", "--schema-name", d.schema)...); err != nil {
			return err
		}
	}
	return nil
}

func hasSchemaVersion(ctx context.Context, url string) (bool, error) {
	db, err := sql.Open("postgres", url)
	if err != nil {
		return false, err
	}
	defer db.Close()
	var exists bool
	err = db.QueryRowContext(ctx, `SELECT to_regclass('public.schema_version') IS NOT NULL`).Scan(&exists)
	return exists, err
}

// runTool runs the server binary's SQL tool, its output appended to logFile.
func runTool(ctx context.Context, bin, logFile string, args ...string) error {
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(f, "\n$ temporal-server %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("temporal-server %s %s: %w (log: %s)", args[len(args)-3], args[len(args)-1], err, logFile)
	}
	return nil
}

// writeTemporalConfig writes the server's configuration (<dir>/cluster.yaml), with tls as its
// global.tls section, and its dynamic config (<dir>/dynamicconfig.yaml,
// temporaldev.DynamicConfig, as every server we start has).
func writeTemporalConfig(dir string, pgPort int, p temporalPorts, shards int, tls string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var dc strings.Builder
	dc.WriteString("# Written by `bbs cluster` on every start (temporaldev.DynamicConfig).\n")
	for _, kv := range temporaldev.DynamicConfig {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&dc, "%s:\n  - value: %s\n    constraints: {}\n", k, v)
	}
	dcFile := filepath.Join(dir, "dynamicconfig.yaml")
	if err := os.WriteFile(dcFile, []byte(dc.String()), 0o644); err != nil {
		return err
	}
	store := func(db string, conns int) string {
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
	service := func(grpc, membership, http int) string {
		s := fmt.Sprintf("    rpc:\n      grpcPort: %d\n      membershipPort: %d\n      bindOnIP: 127.0.0.1\n", grpc, membership)
		if http != 0 {
			s += fmt.Sprintf("      httpPort: %d\n", http)
		}
		return s
	}
	cfg := fmt.Sprintf(`# Written by `+"`bbs cluster`"+` on every start: the real Temporal server on the cluster's
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
`, shards, store("temporal", 20), store("temporal_visibility", 10), tls,
		service(p.frontend, p.mFrontend, p.frontendHTTP), service(p.history, p.mHistory, 0),
		service(p.matching, p.mMatching, 0), service(p.worker, p.mWorker, 0),
		p.frontend, p.frontendHTTP, p.frontend, dcFile)
	return os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(cfg), 0o644)
}

// setUpNamespace registers the namespace (unless it exists) and our search attributes
// (those missing), then waits until the frontend serves the namespace: a namespace just
// registered reaches the frontend's cache only at its next refresh.
func setUpNamespace(ctx context.Context, tcfg system.TemporalConfig, retention time.Duration, log *zap.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// The frontend listens before it serves: dialing fails ("Frontend is not healthy yet")
	// until its membership has formed.
	var c client.Client
	for {
		var err error
		if c, err = system.DialTemporal(ctx, tcfg, log); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
	defer c.Close()
	_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: tcfg.Namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(retention)})
	var exists *serviceerror.NamespaceAlreadyExists
	switch {
	case err == nil:
		log.Info("registered the Temporal namespace", zap.String("namespace", tcfg.Namespace))
	case errors.As(err, &exists):
	default:
		return fmt.Errorf("register namespace %s: %w", tcfg.Namespace, err)
	}
	for {
		err = addSearchAttributes(ctx, c, tcfg.Namespace, log)
		if err == nil {
			_, err = c.WorkflowService().ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: tcfg.Namespace, PageSize: 1, Query: `ProcessGuid = "-"`})
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s not ready: %w", tcfg.Namespace, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func addSearchAttributes(ctx context.Context, c client.Client, namespace string, log *zap.Logger) error {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return err
	}
	missing := map[string]enums.IndexedValueType{}
	for name, kind := range temporaldev.SearchAttributes {
		if _, ok := have.CustomAttributes[name]; ok {
			continue
		}
		v, err := enums.IndexedValueTypeFromString(kind)
		if err != nil {
			return fmt.Errorf("search attribute %s: %w", name, err)
		}
		missing[name] = v
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing}); err != nil {
		return fmt.Errorf("add search attributes: %w", err)
	}
	log.Info("added search attributes", zap.Int("count", len(missing)))
	return errors.New("search attributes just added") // checked again on the next pass
}

// startTemporalServer starts the server process from the configuration in dir, returning once
// its frontend accepts connections.
func startTemporalServer(ctx context.Context, bin, dir, logFile, pidFile string, frontend int) (*supervise.Process, error) {
	return supervise.Start(ctx, supervise.Command{
		Path: bin, Args: []string{"start", "--config-dir", dir, "--env", "cluster"},
		Env: gctune.Env(os.Environ()), LogFile: logFile, PIDFile: pidFile,
		ReadyAddr: fmt.Sprintf("127.0.0.1:%d", frontend), ReadyTimeout: 2 * time.Minute,
		StopTimeout: 20 * time.Second,
	})
}
