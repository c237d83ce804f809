// Command bbs runs the parts of the BBS: the HTTP API, the Temporal worker, migrations, and
// the all-in-one dev mode that `make run` uses.
//
//	bbs api       serve the HTTP API (DATABASE_URL)
//	bbs worker    run the Temporal worker
//	bbs migrate   apply database migrations and exit
//	bbs dev       start PostgreSQL, the Temporal dev server, the API and the worker
//	bbs ssh-proxy, bbs sshd, bbs tps-watcher: the BBS's ssh and Cloud Controller clients
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/updatable-lrps/bbs/internal/gctune"
)

const usage = `usage: bbs <command> [flags]

commands:
  api       serve the HTTP API (JSON, :8889) and the BBS's own protobuf protocol (:8890)
  worker    run the Temporal worker (rollouts, convergence)
  migrate   apply database migrations and exit
  router    route HTTP by Host header to the RUNNING instances of the LRPs (port 8080)
  cell      run a cell agent that runs instances (SIGTERM drains it, Ctrl-C stops it)
  ssh-proxy let ssh users into instances: user diego:<process_guid>/<index> with the
            proxy's password, or cf:<app_guid>/<index> with a one-time code (port 2222)
  ssh-code  print a one-time code for cf:<app_guid>/<index> from the dev stack's stand-in
            UAA (what 'cf ssh-code' prints against a real one)
  sshd      the ssh daemon an LRP runs beside its app (a codependent action)
  tps-watcher  report instance crashes to Cloud Controller, from the BBS event stream
  lb        the load-balancing front of several API replicas (round robin, failover)
  rollout   a rollout's live view and controls: status, watch (exits non-zero when it
            ends failed or reverted), pause, resume, set-pace, abort (bbs rollout -h)
  cluster   the production topology on one machine (make cluster): PostgreSQL, the real
            Temporal server and its UI, 2 API replicas behind 'bbs lb', 2 workers, 3 cells
            and the router, each a supervised process, mutual TLS between them
            (certificates by deploy/gen-certs.sh), state in .cluster/
  dev       run everything on one machine: a private PostgreSQL under .data/ (unless
            DATABASE_URL is set), the Temporal dev server with its Web UI, the API and the
            protocol listener, the worker, the router, the ssh proxy, the tps-watcher
            and 3 cells

Run 'bbs <command> -h' for the flags of a command. Secrets come from the environment:
DATABASE_URL (or DATABASE_URL_FILE naming a file that holds it); the ssh proxy's password,
host key and UAA client secret, BBS_SSH_PROXY_PASSWORD, BBS_SSH_PROXY_HOST_KEY and
BBS_SSH_PROXY_UAA_CLIENT_SECRET; the daemon's keys,
SSHD_HOST_KEY and SSHD_AUTHORIZED_KEY (each also as NAME_FILE). TLS keys are files named by
BBS_TLS_KEY_FILE, BBS_CLIENT_KEY_FILE and TEMPORAL_TLS_KEY.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, ok := commands()[os.Args[1]]
	if !ok {
		if os.Args[1] != "-h" && os.Args[1] != "--help" && os.Args[1] != "help" {
			fmt.Fprintf(os.Stderr, "bbs: unknown command %q\n\n", os.Args[1])
		}
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	gctune.Apply()
	signals := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if os.Args[1] == "cell" {
		signals = signals[:1] // a cell drains on SIGTERM instead of stopping
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	defer stop()
	if err := cmd(ctx, os.Args[2:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		var explained errExit
		if !errors.As(err, &explained) {
			fmt.Fprintf(os.Stderr, "bbs %s: %v\n", os.Args[1], err)
		}
		os.Exit(exitCode(err))
	}
}

// commands are the subcommands: docker-compose.yml's services name them (a test checks it).
func commands() map[string]func(ctx context.Context, args []string) error {
	return map[string]func(ctx context.Context, args []string) error{
		"api":           runAPICommand,
		"worker":        runWorkerCommand,
		"migrate":       runMigrateCommand,
		"dev":           runDevCommand,
		"cluster":       runClusterCommand,
		"lb":            runLBCommand,
		"cell":          runCellCommand,
		"router":        runRouterCommand,
		"ssh-proxy":     runSSHProxyCommand,
		"ssh-code":      runSSHCodeCommand,
		"sshd":          runSSHDCommand,
		"tps-watcher":   runTPSWatcherCommand,
		"rollout":       runRolloutCommand,
		"rollout-group": runRolloutGroupCommand,
	}
}

// envWithoutFlag lists, per command, the environment variables it reads that no flag
// stands for: secrets (never flags, which ps shows) and the store's session settings. Every
// other variable a command reads is named in brackets in its flag's usage (`bbs <command>
// -h`); a test checks that the two together cover every variable cmd/bbs reads, and that
// docker-compose.yml sets no other on a command.
var envWithoutFlag = map[string][]string{
	"api":       {"DATABASE_URL", "DATABASE_URL_FILE", "BBS_DB_JIT", "BBS_DB_STATEMENT_CACHE"},
	"worker":    {"DATABASE_URL", "DATABASE_URL_FILE", "BBS_DB_JIT", "BBS_DB_STATEMENT_CACHE"},
	"migrate":   {"DATABASE_URL", "DATABASE_URL_FILE", "BBS_DB_JIT", "BBS_DB_STATEMENT_CACHE"},
	"dev":       {"DATABASE_URL", "DATABASE_URL_FILE", "BBS_DB_JIT", "BBS_DB_STATEMENT_CACHE"},
	"ssh-proxy": {"BBS_SSH_PROXY_PASSWORD", "BBS_SSH_PROXY_PASSWORD_FILE", "BBS_SSH_PROXY_HOST_KEY", "BBS_SSH_PROXY_HOST_KEY_FILE", "BBS_SSH_PROXY_UAA_CLIENT_SECRET", "BBS_SSH_PROXY_UAA_CLIENT_SECRET_FILE"},
	"sshd":      {"SSHD_HOST_KEY", "SSHD_HOST_KEY_FILE", "SSHD_AUTHORIZED_KEY", "SSHD_AUTHORIZED_KEY_FILE", "CF_INSTANCE_IP", "CF_INSTANCE_PORTS"},
}
