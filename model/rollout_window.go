package model

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	// Zones must resolve the same on every machine, with or without an OS zone database (a
	// scratch container has none): the binary carries its own.
	_ "time/tzdata"
)

// Limits of a rollout window.
const (
	// MaxWindowNameLength bounds a window's name.
	MaxWindowNameLength = 128
	// MaxWindowSpans bounds a window's schedule.
	MaxWindowSpans = 100
)

var windowNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// windowDays are the days a span may name, in time.Weekday order.
var windowDays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// RolloutWindow is a named schedule of times a rollout may advance in (ROLLOUTS-NEXT.md
// section 6, "Windows and freezes"): a rollout or group naming it starts and walks only
// while it is open, and holds at its next index boundary while it is closed. It is open at
// an instant when any span of its schedule is.
type RolloutWindow struct {
	Name     string       `json:"name"`
	Schedule []WindowSpan `json:"schedule"`
	// UpdatedAt is when it was last upserted (Unix nanoseconds; set by the store).
	UpdatedAt int64 `json:"updated_at,omitempty"`
}

// WindowSpan is a span of local time repeating on the given days: open from Start on each
// of Days until End, in TimeZone. An End before Start runs over midnight into the next day
// (the day named is the day the span starts). Times are "HH:MM", 00:00 to 23:59.
//
// Daylight saving: a Start or End that does not exist on a day (the hour skipped when the
// clocks go forward) is the instant it would be with the offset before the change — 02:30
// on a day the clocks go from 02:00 to 03:00 is 03:30 — and one that exists twice (the hour
// repeated when they go back) is its first occurrence. So a span keeps its wall-clock times
// as near as the day allows; one from inside the skipped hour to its end (02:30 to 03:00) is
// empty that day.
type WindowSpan struct {
	Days     []string `json:"days"`
	Start    string   `json:"start"`
	End      string   `json:"end"`
	TimeZone string   `json:"time_zone"`
}

// ValidateWindowName checks a window's name as a field of a request.
func ValidateWindowName(field, name string) error {
	if name == "" {
		return invalid("%s is required", field)
	}
	if len(name) > MaxWindowNameLength {
		return invalid("%s is longer than %d characters", field, MaxWindowNameLength)
	}
	if !windowNamePattern.MatchString(name) {
		return invalid("%s %q may contain only letters, digits, '.', '_' and '-'", field, name)
	}
	return nil
}

// Validate checks a window strictly: a name, at least one span, and in each span known days
// (each once), times of the form HH:MM, an end other than the start and a zone the IANA
// database knows.
func (w *RolloutWindow) Validate() error {
	if err := ValidateWindowName("name", w.Name); err != nil {
		return err
	}
	if len(w.Schedule) == 0 {
		return invalid("schedule must have at least one span")
	}
	if len(w.Schedule) > MaxWindowSpans {
		return invalid("schedule has %d spans, more than %d", len(w.Schedule), MaxWindowSpans)
	}
	for i, s := range w.Schedule {
		if err := s.validate(fmt.Sprintf("schedule[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

func (s WindowSpan) validate(field string) error {
	if len(s.Days) == 0 {
		return invalid("%s.days must name at least one day", field)
	}
	seen := map[string]bool{}
	for _, d := range s.Days {
		if !slices.Contains(windowDays, d) {
			return invalid("%s.days: unknown day %q (one of %s)", field, d, strings.Join(windowDays, ", "))
		}
		if seen[d] {
			return invalid("%s.days names %q twice", field, d)
		}
		seen[d] = true
	}
	start, err := parseClock(field+".start", s.Start)
	if err != nil {
		return err
	}
	end, err := parseClock(field+".end", s.End)
	if err != nil {
		return err
	}
	if start == end {
		return invalid("%s: end %s equals start: a span must have a length (an end before the start runs over midnight)", field, s.End)
	}
	if s.TimeZone == "" {
		return invalid("%s.time_zone is required (an IANA zone such as Europe/Berlin, or UTC)", field)
	}
	if _, err := loadZone(s.TimeZone); err != nil || s.TimeZone == "Local" {
		return invalid("%s.time_zone: unknown time zone %q", field, s.TimeZone)
	}
	return nil
}

// parseClock reads "HH:MM" as minutes after midnight.
func parseClock(field, v string) (int, error) {
	bad := invalid("%s must be a time of day HH:MM (00:00 to 23:59), not %q", field, v)
	if len(v) != 5 || v[2] != ':' {
		return 0, bad
	}
	h, herr := strconv.Atoi(v[:2])
	m, merr := strconv.Atoi(v[3:])
	if herr != nil || merr != nil || h < 0 || h > 23 || m < 0 || m > 59 || v[0] == '+' || v[3] == '+' {
		return 0, bad
	}
	return h*60 + m, nil
}

// zones caches the zones loaded: time.LoadLocation reads and parses the zone database at each
// call, and a window's every question asks for each span's zone.
var zones sync.Map // name → *time.Location

// loadZone is time.LoadLocation, cached.
func loadZone(name string) (*time.Location, error) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, loc)
	return loc, nil
}

// interval is one opening of a window: [from, to).
type interval struct{ from, to time.Time }

// OpenAt says whether the window is open at t. It must have been validated.
func (w *RolloutWindow) OpenAt(t time.Time) bool {
	for _, iv := range w.intervals(t) {
		if !t.Before(iv.from) && t.Before(iv.to) {
			return true
		}
	}
	return false
}

// transitionHorizon is how far NextTransition looks: past a week, every weekly schedule has
// changed at least once, unless it never does.
const transitionHorizon = 8 * 24 * time.Hour

// NextTransition is the first instant after t at which the window opens or closes (in UTC),
// and false when it does neither within a week and a day — it is then always open or
// never. The window must have been validated.
func (w *RolloutWindow) NextTransition(t time.Time) (time.Time, bool) {
	var edges []time.Time
	for _, iv := range merge(w.intervals(t)) {
		edges = append(edges, iv.from, iv.to)
	}
	for _, e := range edges {
		if e.After(t) && e.Before(t.Add(transitionHorizon)) {
			return e.UTC(), true
		}
	}
	return time.Time{}, false
}

// intervals are the window's openings around t: every span on every local day from two days
// before t to nine after (a span over midnight begins the day before it ends), empty ones
// (a span in a skipped hour) left out.
func (w *RolloutWindow) intervals(t time.Time) []interval {
	var out []interval
	for _, s := range w.Schedule {
		loc, err := loadZone(s.TimeZone)
		if err != nil {
			continue // not validated: no openings
		}
		start, _ := parseClock("", s.Start)
		end, _ := parseClock("", s.End)
		local := t.In(loc)
		day := time.Date(local.Year(), local.Month(), local.Day(), 12, 0, 0, 0, loc)
		for d := -2; d <= 9; d++ {
			date := day.AddDate(0, 0, d)
			if !slices.Contains(s.Days, windowDays[date.Weekday()]) {
				continue
			}
			endDate := date
			if end < start {
				endDate = date.AddDate(0, 0, 1)
			}
			iv := interval{wallClock(date, start, loc), wallClock(endDate, end, loc)}
			if iv.from.Before(iv.to) {
				out = append(out, iv)
			}
		}
	}
	return out
}

// merge sorts intervals and joins those that overlap or touch.
func merge(ivs []interval) []interval {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].from.Before(ivs[j].from) })
	var out []interval
	for _, iv := range ivs {
		if n := len(out); n > 0 && !iv.from.After(out[n-1].to) {
			if iv.to.After(out[n-1].to) {
				out[n-1].to = iv.to
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}

// wallClock is the instant minutes after midnight of date's day in loc reads on a clock
// there (WindowSpan says which, on a day the clocks change). It does not rely on time.Date,
// whose choice in a skipped or repeated hour Go leaves open.
func wallClock(date time.Time, minutes int, loc *time.Location) time.Time {
	y, m, d := date.Date()
	h, mm := minutes/60, minutes%60
	naive := time.Date(y, m, d, h, mm, 0, 0, time.UTC) // the wall time read as if UTC
	_, before := naive.Add(-14 * time.Hour).In(loc).Zone()
	_, after := naive.Add(14 * time.Hour).In(loc).Zone()
	var found []time.Time
	for _, off := range []int{before, after} {
		c := naive.Add(-time.Duration(off) * time.Second)
		l := c.In(loc)
		if l.Hour() == h && l.Minute() == mm && l.Day() == d && !slices.ContainsFunc(found, c.Equal) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0: // skipped: with the offset in force before the change
		return naive.Add(-time.Duration(before) * time.Second)
	case 1:
		return found[0]
	}
	if found[1].Before(found[0]) { // repeated: the first occurrence
		return found[1]
	}
	return found[0]
}

// RolloutFreeze is the fleet-wide freeze (ROLLOUTS-NEXT.md section 6): while Frozen, no
// rollout starts (Frozen) unless its update gives strategy.break_glass, and the rollouts
// under way hold at their next index boundary (phase frozen). Generation counts the freezes
// and unfreezes, so that a rollout told of two changes out of order keeps the later.
type RolloutFreeze struct {
	Frozen     bool   `json:"frozen"`
	Reason     string `json:"reason,omitempty"`
	Generation int64  `json:"generation"`
	// ChangedAt is when it was last frozen or unfrozen (Unix nanoseconds; 0: never).
	ChangedAt int64 `json:"changed_at,omitempty"`
}

// MaxFreezeReason bounds a freeze's (and a break glass's) reason.
const MaxFreezeReason = 1024

// RolloutGate is what holds a rollout's forward walk besides an operator's pause: the
// freeze, and its window. A workflow reads it (activities.Rollouts.RolloutGate) and sets its
// timers on NextTransition, never on a clock or zone database of its own.
type RolloutGate struct {
	// Freeze is the fleet's freeze; BreakGlass says the rollout passes it.
	Freeze     RolloutFreeze `json:"freeze"`
	BreakGlass bool          `json:"break_glass,omitempty"`
	// Window is the window named ("" for none); WindowOpen whether it is open at the instant
	// asked about, WindowMissing that no window of the name exists (held, as closed), and
	// NextTransition when it next opens or closes (Unix nanoseconds, 0: never).
	Window         string `json:"window,omitempty"`
	WindowOpen     bool   `json:"window_open,omitempty"`
	WindowMissing  bool   `json:"window_missing,omitempty"`
	NextTransition int64  `json:"next_transition,omitempty"`
}

// Frozen says the freeze holds the rollout.
func (g RolloutGate) Frozen() bool { return g.Freeze.Frozen && !g.BreakGlass }

// WindowClosed says its window holds the rollout.
func (g RolloutGate) WindowClosed() bool { return g.Window != "" && !g.WindowOpen }

// Phase is the phase the gate holds the rollout in (PhaseFrozen, PhaseWaitingForWindow), ""
// when it lets it walk. A freeze outranks a window: it is lifted by hand.
func (g RolloutGate) Phase() string {
	switch {
	case g.Frozen():
		return PhaseFrozen
	case g.WindowClosed():
		return PhaseWaitingForWindow
	}
	return ""
}

// GateAt is a window's part of a gate at t: open or not, and its next transition.
func (w *RolloutWindow) GateAt(t time.Time) (open bool, next int64) {
	if n, ok := w.NextTransition(t); ok {
		next = n.UnixNano()
	}
	return w.OpenAt(t), next
}
