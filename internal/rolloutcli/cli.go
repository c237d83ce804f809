// Package rolloutcli is `bbs rollout`: an operator's and a CI pipeline's view of one LRP's
// rollout, and its controls (ROLLOUTS-NEXT.md section 7), over the JSON API. `watch` follows
// the rollout to its end and exits with a code that says how it ended, so that a pipeline
// needs no wait loop of its own.
package rolloutcli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/model"
)

// Exit codes of Run.
const (
	// ExitOK: the call took effect; for watch, the rollout completed.
	ExitOK = 0
	// ExitError: the API refused the call or could not be reached.
	ExitError = 1
	// ExitUsage: the command line is wrong.
	ExitUsage = 2
	// ExitFailed: the rollout ended failed or reverted (watch).
	ExitFailed = 3
	// ExitNotCompleted: the rollout ended canceled or superseded (watch).
	ExitNotCompleted = 4
)

// Usage is the command's help.
const Usage = `usage: bbs rollout <verb> [flags] <process_guid> [arguments]

verbs:
  status <guid>             print the LRP's rollout (in progress, else its latest) and its indices
  watch <guid>              redraw it until it ends; exit 0 completed, 3 failed or reverted,
                            4 canceled or superseded, 1 when the API cannot tell
  pause <guid>              hold the rollout at its next index
  resume <guid>             release a paused rollout
  set-pace <guid> <n>       replace n indices at once from the next index on
  abort <guid> [reason]     stop and revert to the definition the rollout started from
  promote <guid>            leave a manual canary step (--full: skip the remaining steps)

flags:
`

// Client is what the command needs of the JSON API.
type Client interface {
	Rollout(ctx context.Context, guid string) (*model.Rollout, error)
	ActualLRPs(ctx context.Context, f model.ActualLRPFilter) ([]model.ActualLRP, error)
	PauseRollout(ctx context.Context, guid string) (*model.Rollout, error)
	ResumeRollout(ctx context.Context, guid string) (*model.Rollout, error)
	SetRolloutPace(ctx context.Context, guid string, maxInFlight int32) (*model.Rollout, error)
	AbortRollout(ctx context.Context, guid, reason string) (*model.Rollout, error)
	PromoteRollout(ctx context.Context, guid string, full bool) (*model.Rollout, error)
}

var _ Client = (*bbsclient.Client)(nil)

// Options are the command's flags.
type Options struct {
	// Interval is how often watch reads the rollout.
	Interval time.Duration
	// Timeout ends watch with ExitError when the rollout has not ended by then (0: never).
	Timeout time.Duration
	// Full makes promote skip every remaining step.
	Full bool
}

// Flags registers the command's flags on fs.
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&o.Interval, "interval", 500*time.Millisecond, "how often watch reads the rollout")
	fs.DurationVar(&o.Timeout, "timeout", 0, "watch gives up (exit 1) when the rollout has not ended by then; 0: never")
	fs.BoolVar(&o.Full, "full", false, "promote: skip every remaining canary step and analysis")
}

// Run carries out verb with args (the process guid, then the verb's arguments) and returns
// the exit code; what it prints goes to out, errors to errOut.
func Run(ctx context.Context, c Client, o Options, verb string, args []string, out, errOut io.Writer) int {
	if len(args) == 0 || args[0] == "" {
		fmt.Fprintf(errOut, "bbs rollout %s: a process guid is required\n", verb)
		return ExitUsage
	}
	guid := args[0]
	var r *model.Rollout
	var err error
	switch verb {
	case "status":
		return status(ctx, c, guid, out, errOut)
	case "watch":
		return watch(ctx, c, o, guid, out, errOut)
	case "pause":
		r, err = c.PauseRollout(ctx, guid)
	case "resume":
		r, err = c.ResumeRollout(ctx, guid)
	case "set-pace":
		n, perr := paceArg(args[1:])
		if perr != nil {
			fmt.Fprintf(errOut, "bbs rollout set-pace: %v\n", perr)
			return ExitUsage
		}
		r, err = c.SetRolloutPace(ctx, guid, n)
	case "abort":
		r, err = c.AbortRollout(ctx, guid, strings.Join(args[1:], " "))
	case "promote":
		r, err = c.PromoteRollout(ctx, guid, o.Full)
	default:
		fmt.Fprintf(errOut, "bbs rollout: unknown verb %q\n\n%s", verb, Usage)
		return ExitUsage
	}
	if err != nil {
		fmt.Fprintf(errOut, "bbs rollout %s %s: %v\n", verb, guid, err)
		return ExitError
	}
	fmt.Fprintf(out, "%s: rollout %s is %s (max_in_flight %d)\n", verb, r.ID, r.Phase, r.Strategy.MaxInFlightOr(1))
	return ExitOK
}

func paceArg(args []string) (int32, error) {
	if len(args) != 1 {
		return 0, errors.New("give the new max_in_flight: set-pace <guid> <n>")
	}
	n, err := strconv.ParseInt(args[0], 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("max_in_flight must be a whole number of at least 1, not %q", args[0])
	}
	return int32(n), nil
}

// status prints the view once.
func status(ctx context.Context, c Client, guid string, out, errOut io.Writer) int {
	v, err := read(ctx, c, guid)
	if err != nil {
		fmt.Fprintf(errOut, "bbs rollout status %s: %v\n", guid, err)
		return ExitError
	}
	v.Render(out, time.Now())
	return ExitOK
}

// read is the rollout and the LRP's instances, now.
func read(ctx context.Context, c Client, guid string) (View, error) {
	r, err := c.Rollout(ctx, guid)
	if err != nil {
		return View{}, err
	}
	instances, err := c.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: guid})
	if err != nil {
		return View{}, err
	}
	return View{Rollout: r, Instances: instances}, nil
}

// watch redraws the view until the rollout ends (or the timeout), and returns the exit code
// of its end.
func watch(ctx context.Context, c Client, o Options, guid string, out, errOut io.Writer) int {
	return redraw(ctx, o, "bbs rollout watch "+guid, out, errOut, func(ctx context.Context) (func(io.Writer, time.Time), int, error) {
		v, err := read(ctx, c, guid)
		if err != nil {
			return nil, 0, err
		}
		code := -1
		if !v.Rollout.InProgress() {
			code = endCode(v.Rollout.State)
		}
		return v.Render, code, nil
	})
}

// redraw reads a view every o.Interval and draws it until read says the thing watched ended
// (a code of 0 or more, returned), or the timeout. On a terminal it redraws in place;
// elsewhere (a CI log) it prints a view only when it changed. An API that does not answer
// for a while (a restart) is waited for. A view's last line is its age, which changes every
// second and is not a change.
func redraw(ctx context.Context, o Options, what string, out, errOut io.Writer,
	read func(context.Context) (render func(io.Writer, time.Time), code int, err error)) int {
	if o.Interval <= 0 {
		o.Interval = 500 * time.Millisecond
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	tty := isTerminal(out)
	var last []byte
	for {
		render, code, err := read(ctx)
		switch {
		case ctx.Err() != nil:
			fmt.Fprintf(errOut, "%s: gave up: %v\n", what, ctx.Err())
			return ExitError
		case err != nil && !model.IsType(err, model.ErrUnavailable):
			fmt.Fprintf(errOut, "%s: %v\n", what, err)
			return ExitError
		case err != nil:
			fmt.Fprintf(errOut, "%s: %v; trying again\n", what, err)
		default:
			var b bytes.Buffer
			render(&b, time.Now())
			if !bytes.Equal(withoutAge(b.Bytes()), withoutAge(last)) || tty {
				if tty {
					io.WriteString(out, "\x1b[H\x1b[2J")
				} else if last != nil {
					io.WriteString(out, "\n")
				}
				out.Write(b.Bytes())
			}
			last = b.Bytes()
			if code >= 0 {
				return code
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(o.Interval):
		}
	}
}

// withoutAge is a rendered view without its last line, the rollout's age, which changes
// every second: a CI log gets a new view when something else changed.
func withoutAge(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}

// endCode is watch's exit code for a rollout that ended in state.
func endCode(state string) int {
	switch state {
	case model.RolloutCompleted:
		return ExitOK
	case model.RolloutCanceled, model.RolloutSuperseded:
		return ExitNotCompleted
	}
	return ExitFailed
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
