package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/rolloutcli"
)

// errExit carries a non-zero exit code that the command has already explained.
type errExit int

func (e errExit) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// runRolloutCommand is `bbs rollout <verb> [flags] <process_guid> [arguments]`: a rollout's
// view and controls over the JSON API (internal/rolloutcli).
func runRolloutCommand(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(os.Stderr, rolloutcli.Usage)
		return flag.ErrHelp
	}
	verb := args[0]
	cmd := boot.NewCommand("rollout " + verb)
	apiURL := cmd.Flags.String("api", boot.EnvOr("BBS_API_URL", "http://127.0.0.1:8889"), "the BBS JSON API [BBS_API_URL]")
	var o rolloutcli.Options
	o.Flags(cmd.Flags)
	cmd.PeerTLS()
	cmd.ConsoleLog()
	cmd.Flags.Usage = func() {
		fmt.Fprint(os.Stderr, rolloutcli.Usage)
		cmd.Flags.PrintDefaults()
	}
	p, err := cmd.Start(ctx, args[1:])
	if err != nil {
		return err
	}
	defer p.Close()
	code := rolloutcli.Run(ctx, bbsclient.New(*apiURL, p.PeerTLS), o, verb, cmd.Flags.Args(), os.Stdout, os.Stderr)
	if code != rolloutcli.ExitOK {
		return errExit(code)
	}
	return nil
}

// runRolloutGroupCommand is `bbs rollout-group <verb> [flags] <group_id> [arguments]`: a
// rollout group's creation, view and controls over the JSON API (internal/rolloutcli).
func runRolloutGroupCommand(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(os.Stderr, rolloutcli.GroupUsage)
		return flag.ErrHelp
	}
	verb := args[0]
	cmd := boot.NewCommand("rollout-group " + verb)
	apiURL := cmd.Flags.String("api", boot.EnvOr("BBS_API_URL", "http://127.0.0.1:8889"), "the BBS JSON API [BBS_API_URL]")
	var o rolloutcli.GroupOptions
	o.Flags(cmd.Flags)
	cmd.PeerTLS()
	cmd.ConsoleLog()
	cmd.Flags.Usage = func() {
		fmt.Fprint(os.Stderr, rolloutcli.GroupUsage)
		cmd.Flags.PrintDefaults()
	}
	p, err := cmd.Start(ctx, args[1:])
	if err != nil {
		return err
	}
	defer p.Close()
	code := rolloutcli.RunGroup(ctx, bbsclient.New(*apiURL, p.PeerTLS), o, verb, cmd.Flags.Args(), os.Stdin, os.Stdout, os.Stderr)
	if code != rolloutcli.ExitOK {
		return errExit(code)
	}
	return nil
}

// exitCode is the process's exit code for a command's error.
func exitCode(err error) int {
	var e errExit
	if errors.As(err, &e) {
		return int(e)
	}
	return 1
}
