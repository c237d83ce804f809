// Command temporal-server is the real Temporal server (go.temporal.io/server, pinned in this
// module's go.mod) as `make cluster` runs it, with the two tools that go with it, in one
// binary so that one build serves all three:
//
//	temporal-server start --config-dir DIR [--env NAME]   all four services (frontend, history,
//	                                                       matching, worker) in this process
//	temporal-server sql-tool ARGS...                       temporal-sql-tool: create-database,
//	                                                       setup-schema, update-schema
//	temporal-server ui --listen ADDR --frontend ADDR       the Temporal Web UI (embedded assets,
//	                                                       no network needed)
//
// It is a module of its own so that the BBS's go.mod does not take on the server's
// dependency graph; `make bin/temporal-server` builds it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	_ "time/tzdata" // the server's timezone fallback, as its own cmd/server has

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/headers"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql" // the postgres12 plugin
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/tools/sql"
)

const usage = `usage: temporal-server <command> [flags]

commands:
  start     run the Temporal server (frontend, history, matching and worker services)
            from <config-dir>/<env>.yaml
  sql-tool  temporal-sql-tool (create-database, setup-schema, update-schema, ...)
  ui        serve the Temporal Web UI for a frontend
  version   print the server version
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "start":
		err = start(os.Args[2:])
	case "sql-tool":
		// RunTool takes os.Args whole: the program name first.
		err = sql.RunTool(append([]string{"temporal-sql-tool"}, os.Args[2:]...))
	case "ui":
		err = ui(os.Args[2:])
	case "version":
		fmt.Println(headers.ServerVersion)
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "temporal-server %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// start runs the server until SIGINT or SIGTERM, as the server's own cmd/server does.
func start(args []string) error {
	fs := flag.NewFlagSet("start", flag.ContinueOnError)
	dir := fs.String("config-dir", "config", "directory of the server's configuration")
	env := fs.String("env", "development", "configuration file name without .yaml")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.LoadConfig(*env, *dir, "")
	if err != nil {
		return err
	}
	logger := log.NewZapLogger(log.BuildZapLogger(cfg.Log))
	logger.Info("Temporal server starting", tag.NewStringTag("server-version", headers.ServerVersion))
	var dc dynamicconfig.Client = dynamicconfig.NewNoopClient()
	if cfg.DynamicConfigClient != nil {
		if dc, err = dynamicconfig.NewFileBasedClient(cfg.DynamicConfigClient, logger, temporal.InterruptCh()); err != nil {
			return fmt.Errorf("dynamic config: %w", err)
		}
	}
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return err
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return err
	}
	s, err := temporal.NewServer(
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithConfig(cfg),
		temporal.WithDynamicConfigClient(dc),
		temporal.WithLogger(logger),
		temporal.InterruptOn(temporal.InterruptCh()),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
	)
	if err != nil {
		return fmt.Errorf("create server: %w", err)
	}
	// Start blocks until the interrupt channel fires, then stops every service.
	return s.Start()
}

// ui serves the Web UI, its assets embedded in the ui-server module, for the frontend at
// --frontend, until SIGINT or SIGTERM.
func ui(args []string) error {
	fs := flag.NewFlagSet("ui", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8233", "where the UI is served")
	frontend := fs.String("frontend", "127.0.0.1:7233", "the Temporal frontend (gRPC)")
	namespace := fs.String("namespace", "default", "the namespace the UI opens")
	caFile := fs.String("tls-ca", "", "CA of the frontend's certificate (PEM); with --tls-cert and --tls-key: mutual TLS to the frontend")
	certFile := fs.String("tls-cert", "", "client certificate for the frontend (PEM)")
	keyFile := fs.String("tls-key", "", "client key for the frontend (PEM)")
	serverName := fs.String("tls-server-name", "", "the name the frontend's certificate is checked against")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, portText, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	cfg := &uiconfig.Config{
		Host:                host,
		Port:                port,
		TemporalGRPCAddress: *frontend,
		EnableUI:            true,
		DefaultNamespace:    *namespace,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
	}
	if *caFile != "" || *certFile != "" {
		cfg.TLS = uiconfig.TLS{CaFile: *caFile, CertFile: *certFile, KeyFile: *keyFile,
			ServerName: *serverName, EnableHostVerification: true}
	}
	s := uiserver.NewServer(uiserveroptions.WithConfigProvider(cfg))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	errc := make(chan error, 1)
	go func() { errc <- s.Start() }()
	select {
	case err := <-errc:
		return err
	case <-stop:
		s.Stop()
		return nil
	}
}
