package rolloutcli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// GroupUsage is `bbs rollout-group`'s help.
const GroupUsage = `usage: bbs rollout-group <verb> [flags] <group_id> [arguments]

verbs:
  create <id> [flags]       roll one change across the LRPs a selector chooses, in waves:
                            --spec FILE (the JSON of POST /v1/rollout_groups/create, "-": stdin)
                            or --domain, --guids, --tag, --rootfs, --env, --waves, --max-lrps,
                            --max-per-cell, --max-failed, --pause-between
  status <id>               print the group: its waves, members and budgets in use
  watch <id>                redraw it until it ends; exit 0 completed, 3 aborted
  pause <id>                start no further member (those rolling go on)
  resume <id>               start members again
  abort <id> [reason]       start no further member; those rolling revert
  list                      the groups, newest first

flags:
`

// GroupClient is what `bbs rollout-group` needs of the JSON API.
type GroupClient interface {
	CreateRolloutGroup(ctx context.Context, spec model.RolloutGroupSpec) (*model.RolloutGroup, error)
	RolloutGroup(ctx context.Context, id string) (*model.RolloutGroup, error)
	RolloutGroups(ctx context.Context) ([]model.RolloutGroup, error)
	ControlRolloutGroup(ctx context.Context, id, kind, reason string) (*model.RolloutGroup, error)
}

// GroupOptions are `bbs rollout-group`'s flags: watch's, and create's spec.
type GroupOptions struct {
	Options
	SpecFile     string
	Domain       string
	GUIDs        string
	Tags         listFlag
	RootFS       string
	Env          listFlag
	Waves        string
	MaxLRPs      int
	MaxPerCell   int
	MaxFailed    float64
	PauseBetween time.Duration
	Window       string
}

// listFlag is a flag given once per value.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// Flags registers the flags on fs.
func (o *GroupOptions) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&o.Interval, "interval", 500*time.Millisecond, "how often watch reads the group")
	fs.DurationVar(&o.Timeout, "timeout", 0, "watch gives up (exit 1) when the group has not ended by then; 0: never")
	fs.StringVar(&o.SpecFile, "spec", "", "create: the group's JSON spec from this file (\"-\": stdin); the other create flags are then not allowed")
	fs.StringVar(&o.Domain, "domain", "", "create: select the LRPs of this domain")
	fs.StringVar(&o.GUIDs, "guids", "", "create: select these process guids (comma-separated)")
	fs.Var(&o.Tags, "tag", "create: select LRPs with this static metric tag, NAME=VALUE (repeatable)")
	fs.StringVar(&o.RootFS, "rootfs", "", "create: the patch's rootfs (the stack update)")
	fs.Var(&o.Env, "env", "create: a patch env variable, NAME=VALUE (repeatable)")
	fs.StringVar(&o.Waves, "waves", "100", "create: cumulative percents of the members per wave, e.g. 1,10,100")
	fs.IntVar(&o.MaxLRPs, "max-lrps", 0, "create: members rolling at once, fleet-wide (0: the server's default)")
	fs.IntVar(&o.MaxPerCell, "max-per-cell", 0, "create: members' new instances starting at once on one cell (0: unbounded)")
	fs.Float64Var(&o.MaxFailed, "max-failed", 0, "create: percent of a wave's members that may fail or revert before the group aborts")
	fs.DurationVar(&o.PauseBetween, "pause-between", 0, "create: pause between waves")
	fs.StringVar(&o.Window, "window", "", "create: the rollout window the group advances in")
}

// spec is the group create's flags ask for.
func (o *GroupOptions) spec(id string, stdin io.Reader) (model.RolloutGroupSpec, error) {
	var s model.RolloutGroupSpec
	if o.SpecFile != "" {
		var b []byte
		var err error
		if o.SpecFile == "-" {
			b, err = io.ReadAll(stdin)
		} else {
			b, err = os.ReadFile(o.SpecFile)
		}
		if err != nil {
			return s, err
		}
		if err := json.Unmarshal(b, &s); err != nil {
			return s, fmt.Errorf("%s: %w", o.SpecFile, err)
		}
		if id != "" && s.GroupID != "" && id != s.GroupID {
			return s, fmt.Errorf("the spec names group %q, the command line %q", s.GroupID, id)
		}
		if s.GroupID == "" {
			s.GroupID = id
		}
		return s, nil
	}
	s = model.RolloutGroupSpec{GroupID: id, Selector: model.RolloutGroupSelector{Domain: o.Domain},
		MaxConcurrentLRPs: int32(o.MaxLRPs), MaxConcurrentPerCell: int32(o.MaxPerCell), MaxFailedPercent: o.MaxFailed,
		PauseBetweenWavesMS: o.PauseBetween.Milliseconds(), Window: o.Window}
	if o.GUIDs != "" {
		s.Selector.ProcessGUIDs = strings.Split(o.GUIDs, ",")
	}
	for _, t := range o.Tags {
		name, value, ok := strings.Cut(t, "=")
		if !ok {
			return s, fmt.Errorf("--tag %q: give NAME=VALUE", t)
		}
		if s.Selector.MetricTags == nil {
			s.Selector.MetricTags = map[string]string{}
		}
		s.Selector.MetricTags[name] = value
	}
	if o.RootFS != "" {
		s.Patch.RootFS = &o.RootFS
	}
	for _, e := range o.Env {
		name, value, ok := strings.Cut(e, "=")
		if !ok {
			return s, fmt.Errorf("--env %q: give NAME=VALUE", e)
		}
		s.Patch.Env = append(s.Patch.Env, model.EnvironmentVariable{Name: name, Value: value})
	}
	for _, w := range strings.Split(o.Waves, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil {
			return s, fmt.Errorf("--waves: %q is not a percent", w)
		}
		s.Waves = append(s.Waves, model.RolloutWave{Percent: p})
	}
	return s, nil
}

// RunGroup carries out a `bbs rollout-group` verb and returns the exit code.
func RunGroup(ctx context.Context, c GroupClient, o GroupOptions, verb string, args []string, stdin io.Reader, out, errOut io.Writer) int {
	if verb == "list" {
		gs, err := c.RolloutGroups(ctx)
		if err != nil {
			fmt.Fprintf(errOut, "bbs rollout-group list: %v\n", err)
			return ExitError
		}
		for _, g := range gs {
			fmt.Fprintf(out, "%-30s %-18s wave %d/%d  %s\n", g.GroupID, g.State, g.Wave+1, len(g.Waves), memberSummary(g))
		}
		return ExitOK
	}
	if len(args) == 0 || args[0] == "" {
		fmt.Fprintf(errOut, "bbs rollout-group %s: a group id is required\n", verb)
		return ExitUsage
	}
	id := args[0]
	var g *model.RolloutGroup
	var err error
	switch verb {
	case "create":
		spec, serr := o.spec(id, stdin)
		if serr != nil {
			fmt.Fprintf(errOut, "bbs rollout-group create: %v\n", serr)
			return ExitUsage
		}
		g, err = c.CreateRolloutGroup(ctx, spec)
	case "status":
		g, err = c.RolloutGroup(ctx, id)
		if err == nil {
			GroupView{g}.Render(out, time.Now())
			return ExitOK
		}
	case "watch":
		return redraw(ctx, o.Options, "bbs rollout-group watch "+id, out, errOut, func(ctx context.Context) (func(io.Writer, time.Time), int, error) {
			g, err := c.RolloutGroup(ctx, id)
			if err != nil {
				return nil, 0, err
			}
			code := -1
			if !model.RolloutGroupInProgress(g.State) && g.Budgets.LRPsInUse == 0 {
				code = ExitOK
				if g.State == model.GroupAborted {
					code = ExitFailed
				}
			}
			return GroupView{g}.Render, code, nil
		})
	case model.GroupControlPause, model.GroupControlResume, model.GroupControlAbort:
		g, err = c.ControlRolloutGroup(ctx, id, verb, strings.Join(args[1:], " "))
	default:
		fmt.Fprintf(errOut, "bbs rollout-group: unknown verb %q\n\n%s", verb, GroupUsage)
		return ExitUsage
	}
	if err != nil {
		fmt.Fprintf(errOut, "bbs rollout-group %s %s: %v\n", verb, id, err)
		return ExitError
	}
	fmt.Fprintf(out, "%s: rollout group %s is %s, wave %d of %d (%s)\n", verb, g.GroupID, g.State, g.Wave+1, len(g.Waves), memberSummary(*g))
	return ExitOK
}

// GroupView is what `bbs rollout-group status` prints and `watch` redraws.
type GroupView struct {
	Group *model.RolloutGroup
}

// Render writes the view as text; its last line is the group's age.
func (v GroupView) Render(w io.Writer, now time.Time) {
	g := v.Group
	fmt.Fprintf(w, "rollout group %s: %s, wave %d of %d", g.GroupID, g.State, g.Wave+1, len(g.Waves))
	if g.Reason != "" {
		fmt.Fprintf(w, ": %s", g.Reason)
	}
	fmt.Fprintln(w)
	decided, total := 0, 0
	for _, wv := range g.Waves {
		for state, n := range wv.Counts {
			total += n
			if state != model.MemberPending && state != model.MemberRolling {
				decided += n
			}
		}
	}
	fmt.Fprintf(w, "        [%s] %d/%d members decided (%s)\n", bar(int32(decided), int32(total)), decided, total, memberSummary(*g))
	fmt.Fprintf(w, "budgets %d of %d members rolling; at most %d new instances starting on one cell (max %s)\n",
		g.Budgets.LRPsInUse, g.Budgets.MaxConcurrentLRPs, g.Budgets.PerCellMaxInUse, perCell(g.Budgets.MaxConcurrentPerCell))
	if g.WaveOpensAt > 0 {
		fmt.Fprintf(w, "next    wave %d opens at %s\n", g.Wave+2, time.Unix(0, g.WaveOpensAt).UTC().Format("15:04:05 UTC"))
	}
	for i, wv := range g.Waves {
		fmt.Fprintf(w, "wave %d  %5.1f %%  %-9s %s\n", i+1, wv.Percent, wv.State, countsLine(wv.Counts))
		for _, m := range wv.Members {
			if m.State == model.MemberRolling || m.State == model.MemberFailed || m.State == model.MemberReverted {
				fmt.Fprintf(w, "          %-9s %s", m.State, m.ProcessGUID)
				if m.Reason != "" {
					fmt.Fprintf(w, ": %s", m.Reason)
				}
				fmt.Fprintln(w)
			}
		}
	}
	fmt.Fprintf(w, "age     %v\n", now.Sub(time.Unix(0, g.CreatedAt)).Round(time.Second))
}

func perCell(n int32) string {
	if n == 0 {
		return "unbounded"
	}
	return strconv.Itoa(int(n))
}

// countsLine is a wave's counts in a fixed order.
func countsLine(c map[string]int) string {
	var parts []string
	for _, s := range []string{model.MemberPending, model.MemberRolling, model.MemberCompleted, model.MemberReverted, model.MemberFailed, model.MemberSkipped} {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[s], s))
		}
	}
	if len(parts) == 0 {
		return "no members"
	}
	return strings.Join(parts, ", ")
}

// memberSummary is the group's members counted by state over every wave.
func memberSummary(g model.RolloutGroup) string {
	all := map[string]int{}
	for _, w := range g.Waves {
		for s, n := range w.Counts {
			all[s] += n
		}
	}
	return countsLine(all)
}
