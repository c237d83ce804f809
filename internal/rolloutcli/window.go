package rolloutcli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/model"
)

// WindowUsage is `bbs rollout-window`'s help.
const WindowUsage = `usage: bbs rollout-window <verb> [flags] [arguments]

verbs:
  upsert <name> <span>...   create or replace a window; a span is "<days> <start>-<end> <zone>",
                            e.g. "mon,tue,wed,thu,fri 09:00-17:00 Europe/Berlin" or
                            "sat 22:00-02:00 UTC" (an end before the start runs over midnight);
                            or --file <schedule.json> with the JSON body of the API's upsert
  get <name>                print a window and whether it is open now
  list                      print every window
  delete <name>             remove a window no rollout under way and no LRP default names

flags:
`

// WindowClient is what the window command needs of the JSON API.
type WindowClient interface {
	UpsertRolloutWindow(ctx context.Context, w model.RolloutWindow) (*model.RolloutWindow, bool, error)
	RolloutWindow(ctx context.Context, name string) (*model.RolloutWindow, error)
	RolloutWindows(ctx context.Context) ([]model.RolloutWindow, error)
	DeleteRolloutWindow(ctx context.Context, name string) error
}

var _ WindowClient = (*bbsclient.Client)(nil)

// RunWindow carries out a window verb with args and returns the exit code. file, for
// upsert, names a JSON body to send instead of spans on the command line. now says which
// windows are open.
func RunWindow(ctx context.Context, c WindowClient, verb string, args []string, file string, now time.Time, out, errOut io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(errOut, "bbs rollout-window %s: %v\n", verb, err)
		return ExitError
	}
	usage := func(msg string) int {
		fmt.Fprintf(errOut, "bbs rollout-window %s: %s\n", verb, msg)
		return ExitUsage
	}
	switch verb {
	case "list":
		ws, err := c.RolloutWindows(ctx)
		if err != nil {
			return fail(err)
		}
		for _, w := range ws {
			renderWindow(out, &w, now)
		}
		return ExitOK
	case "get", "delete":
		if len(args) != 1 {
			return usage("give the window's name")
		}
		if verb == "delete" {
			if err := c.DeleteRolloutWindow(ctx, args[0]); err != nil {
				return fail(err)
			}
			fmt.Fprintf(out, "deleted rollout window %s\n", args[0])
			return ExitOK
		}
		w, err := c.RolloutWindow(ctx, args[0])
		if err != nil {
			return fail(err)
		}
		renderWindow(out, w, now)
		return ExitOK
	case "upsert":
		w, err := windowFromArgs(args, file)
		if err != nil {
			return usage(err.Error())
		}
		got, created, err := c.UpsertRolloutWindow(ctx, w)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(out, "%s rollout window %s\n", map[bool]string{true: "created", false: "replaced"}[created], got.Name)
		renderWindow(out, got, now)
		return ExitOK
	}
	fmt.Fprintf(errOut, "bbs rollout-window: unknown verb %q\n\n%s", verb, WindowUsage)
	return ExitUsage
}

// windowFromArgs is the window upsert names: from file, or a name and spans.
func windowFromArgs(args []string, file string) (model.RolloutWindow, error) {
	var w model.RolloutWindow
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return w, err
		}
		if err := model.DecodeStrict("", b, &w); err != nil {
			return w, fmt.Errorf("%s: %v", file, err)
		}
		if len(args) > 0 && args[0] != w.Name {
			return w, fmt.Errorf("%s names window %q, not %q", file, w.Name, args[0])
		}
		return w, nil
	}
	if len(args) < 2 {
		return w, fmt.Errorf(`give the name and at least one span: upsert <name> "<days> <start>-<end> <zone>"...`)
	}
	w.Name = args[0]
	for _, a := range args[1:] {
		s, err := parseSpan(a)
		if err != nil {
			return w, err
		}
		w.Schedule = append(w.Schedule, s)
	}
	return w, nil
}

// parseSpan reads "<days> <start>-<end> <zone>"; the API validates what it says.
func parseSpan(a string) (model.WindowSpan, error) {
	f := strings.Fields(a)
	if len(f) != 3 {
		return model.WindowSpan{}, fmt.Errorf(`span %q: want "<days> <start>-<end> <zone>", e.g. "mon,fri 09:00-17:00 Europe/Berlin"`, a)
	}
	start, end, ok := strings.Cut(f[1], "-")
	if !ok {
		return model.WindowSpan{}, fmt.Errorf("span %q: the times are <start>-<end>, e.g. 09:00-17:00", a)
	}
	return model.WindowSpan{Days: strings.Split(f[0], ","), Start: start, End: end, TimeZone: f[2]}, nil
}

// renderWindow prints a window's spans and whether it is open at now.
func renderWindow(w io.Writer, win *model.RolloutWindow, now time.Time) {
	state := "closed"
	if win.OpenAt(now) {
		state = "open"
	}
	fmt.Fprintf(w, "%s: %s now", win.Name, state)
	if next, ok := win.NextTransition(now); ok {
		fmt.Fprintf(w, ", until %s", next.Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	for _, s := range win.Schedule {
		fmt.Fprintf(w, "  %s %s-%s %s\n", strings.Join(s.Days, ","), s.Start, s.End, s.TimeZone)
	}
}
