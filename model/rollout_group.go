package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
)

// Rollout group states (ROLLOUTS-NEXT.md section 6). Pending, rolling, paused and
// waiting_for_window are in progress (RolloutGroupInProgress); completed and aborted are final.
const (
	GroupPending          = "pending"
	GroupRolling          = "rolling"
	GroupPaused           = "paused"
	GroupWaitingForWindow = "waiting_for_window"
	GroupCompleted        = "completed"
	GroupAborted          = "aborted"
)

// RolloutGroupInProgress reports whether a group in the given state may still start members.
func RolloutGroupInProgress(state string) bool {
	return state != GroupCompleted && state != GroupAborted
}

// Member states: a member is pending until its rollout starts, rolling while the rollout is
// in progress, then completed, reverted or failed as the rollout ended; skipped when it never
// rolled (the group aborted first, its LRP was gone or busy, or an operator took it over).
const (
	MemberPending   = "pending"
	MemberRolling   = "rolling"
	MemberCompleted = "completed"
	MemberReverted  = "reverted"
	MemberFailed    = "failed"
	MemberSkipped   = "skipped"
)

// MemberStateOf is the member state of a member whose rollout ended in the given state.
// A rollout an operator canceled or superseded did not fail: the member is skipped (it does
// not count against max_failed_percent).
func MemberStateOf(rolloutState string) string {
	switch rolloutState {
	case RolloutCompleted:
		return MemberCompleted
	case RolloutReverted:
		return MemberReverted
	case RolloutFailed:
		return MemberFailed
	case RolloutActive, RolloutPaused, RolloutCanceling:
		return MemberRolling
	default:
		return MemberSkipped
	}
}

// Limits of a group: a request must fit, and a group must be able to end.
const (
	MaxGroupWaves       = 20
	MaxGroupMembers     = 100000
	MaxGroupConcurrency = 10000
	// DefaultGroupConcurrentLRPs is max_concurrent_lrps when a request gives none.
	DefaultGroupConcurrentLRPs = 10
)

// RolloutGroupSpec is a rollout group as created (POST /v1/rollout_groups/create).
type RolloutGroupSpec struct {
	GroupID  string               `json:"group_id"`
	Selector RolloutGroupSelector `json:"selector"`
	Patch    DefinitionPatch      `json:"patch"`
	// Strategy is each member's update strategy, resolved over the member's default and
	// the server's as an update's is.
	Strategy            *RolloutStrategy `json:"strategy,omitempty"`
	Waves               []RolloutWave    `json:"waves"`
	PauseBetweenWavesMS int64            `json:"pause_between_waves_ms,omitempty"`
	// MaxConcurrentLRPs bounds the members rolling at once, fleet-wide.
	MaxConcurrentLRPs int32 `json:"max_concurrent_lrps"`
	// MaxConcurrentPerCell bounds the members' new instances starting at once (CLAIMED, not
	// yet RUNNING) on one cell; 0 leaves it unbounded.
	MaxConcurrentPerCell int32 `json:"max_concurrent_per_cell"`
	// MaxFailedPercent: once more than this percent of a wave's members ended reverted or
	// failed, the group aborts (0: the first such member aborts it).
	MaxFailedPercent float64 `json:"max_failed_percent"`
	// Window names the rollout window the group and its members advance in.
	Window string `json:"window,omitempty"`
}

// RolloutGroupSelector chooses a group's members: the LRPs that match every criterion given.
type RolloutGroupSelector struct {
	Domain       string   `json:"domain,omitempty"`
	ProcessGUIDs []string `json:"process_guids,omitempty"`
	// MetricTags match static metric tags by value (e.g. {"space_id": "..."}).
	MetricTags map[string]string `json:"metric_tags,omitempty"`
}

// RolloutWave is one wave: cumulative percent of the members rolled by its end.
type RolloutWave struct {
	Percent float64 `json:"percent"`
}

// DefinitionPatch is the change a group applies to each member's active definition: the
// stack update (rootfs) or env change of a fleet-wide fix. Env variables are set by name:
// a name the definition has gets the new value, others are added.
type DefinitionPatch struct {
	RootFS *string               `json:"rootfs,omitempty"`
	Env    []EnvironmentVariable `json:"env,omitempty"`
}

// UnmarshalJSON decodes a patch strictly: a misspelt field would otherwise be a patch that
// changes nothing, found out only after a whole fleet rolled to the same definition.
func (p *DefinitionPatch) UnmarshalJSON(data []byte) error {
	type plain DefinitionPatch
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var v plain
	if err := dec.Decode(&v); err != nil {
		if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return invalid("patch: unknown field %s (a patch sets rootfs and env)", msg)
		}
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return invalid("patch.%s: expected %s, got JSON %s", typeErr.Field, DescribeJSONType(typeErr.Type.String()), typeErr.Value)
		}
		return invalid("patch: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("patch: unexpected data after the object")
	}
	*p = DefinitionPatch(v)
	return nil
}

// Empty reports whether the patch sets nothing.
func (p DefinitionPatch) Empty() bool { return p.RootFS == nil && len(p.Env) == 0 }

// Apply is def with the patch applied, under the new id; changed says whether anything but
// the id differs. def is not modified. The definition's protobuf, when a BBS-protocol client
// gave one, is the caller's to patch alike (ProtobufPatcher).
func (p DefinitionPatch) Apply(def LRPDefinition, id string) (out LRPDefinition, changed bool) {
	out = def
	out.DefinitionID = id
	if p.RootFS != nil && *p.RootFS != def.RootFS {
		out.RootFS, changed = *p.RootFS, true
	}
	if len(p.Env) > 0 {
		out.Env = slices.Clone(def.Env)
		for _, e := range p.Env {
			i := slices.IndexFunc(out.Env, func(have EnvironmentVariable) bool { return have.Name == e.Name })
			switch {
			case i < 0:
				out.Env, changed = append(out.Env, e), true
			case out.Env[i].Value != e.Value:
				out.Env[i].Value, changed = e.Value, true
			}
		}
	}
	return out, changed
}

// Validate checks the spec by itself; the store checks what needs the fleet (the selection,
// whether the patch changes anything, the window).
func (s *RolloutGroupSpec) Validate() error {
	if err := ValidateGUID("group_id", s.GroupID); err != nil {
		return err
	}
	if err := s.Selector.validate(); err != nil {
		return err
	}
	if s.Patch.Empty() {
		return invalid("patch: a group needs a change to apply (rootfs or env)")
	}
	if s.Patch.RootFS != nil {
		if err := validateContainer(*s.Patch.RootFS, 0, 0, 0, 0); err != nil {
			return invalid("patch.%s", err.(*Error).Message)
		}
	}
	if err := validateEnv("patch.env", s.Patch.Env); err != nil {
		return err
	}
	if err := s.Strategy.Validate(); err != nil {
		return err
	}
	if s.Strategy != nil && s.Strategy.Window != nil {
		return invalid("strategy.window: a group's members advance in the group's window (window), not their own")
	}
	if err := validateWaves(s.Waves); err != nil {
		return err
	}
	if s.PauseBetweenWavesMS < 0 || s.PauseBetweenWavesMS > MaxStrategyDurationMS {
		return invalid("pause_between_waves_ms must be between 0 and %d", int64(MaxStrategyDurationMS))
	}
	if s.MaxConcurrentLRPs < 0 || s.MaxConcurrentLRPs > MaxGroupConcurrency {
		return invalid("max_concurrent_lrps must be between 1 and %d (0: the default, %d)", MaxGroupConcurrency, DefaultGroupConcurrentLRPs)
	}
	if s.MaxConcurrentPerCell < 0 || s.MaxConcurrentPerCell > MaxGroupConcurrency {
		return invalid("max_concurrent_per_cell must be between 0 (unbounded) and %d", MaxGroupConcurrency)
	}
	if math.IsNaN(s.MaxFailedPercent) || s.MaxFailedPercent < 0 || s.MaxFailedPercent > 100 {
		return invalid("max_failed_percent must be between 0 and 100")
	}
	if s.Window != "" {
		if err := ValidateGUID("window", s.Window); err != nil {
			return err
		}
	}
	return nil
}

// WithDefaults is the spec with the defaults filled in: one wave of every member, and
// DefaultGroupConcurrentLRPs members at once.
func (s RolloutGroupSpec) WithDefaults() RolloutGroupSpec {
	if len(s.Waves) == 0 {
		s.Waves = []RolloutWave{{Percent: 100}}
	}
	if s.MaxConcurrentLRPs == 0 {
		s.MaxConcurrentLRPs = DefaultGroupConcurrentLRPs
	}
	return s
}

func (sel *RolloutGroupSelector) validate() error {
	if sel.Domain == "" && len(sel.ProcessGUIDs) == 0 && len(sel.MetricTags) == 0 {
		return invalid("selector: give a domain, process_guids or metric_tags (a group never selects the whole fleet by omission)")
	}
	if sel.Domain != "" {
		if len(sel.Domain) > MaxGUIDLength {
			return invalid("selector.domain is longer than %d characters", MaxGUIDLength)
		}
	}
	if len(sel.ProcessGUIDs) > MaxGroupMembers {
		return invalid("selector.process_guids: at most %d", MaxGroupMembers)
	}
	for _, g := range sel.ProcessGUIDs {
		if err := ValidateGUID("selector.process_guids[]", g); err != nil {
			return err
		}
	}
	for k := range sel.MetricTags {
		if k == "" {
			return invalid("selector.metric_tags: a tag name is empty")
		}
	}
	return nil
}

// validateWaves checks that the waves' cumulative percents rise and end at 100, so that every
// member is in a wave.
func validateWaves(waves []RolloutWave) error {
	if len(waves) == 0 {
		return nil // the default: one wave
	}
	if len(waves) > MaxGroupWaves {
		return invalid("waves: at most %d", MaxGroupWaves)
	}
	prev := 0.0
	for i, w := range waves {
		if math.IsNaN(w.Percent) || w.Percent <= prev || w.Percent > 100 {
			return invalid("waves[%d].percent must be above the wave before's (%g) and at most 100: percents are cumulative", i, prev)
		}
		prev = w.Percent
	}
	if prev != 100 {
		return invalid("waves: the last wave's percent must be 100, so that every member is rolled")
	}
	return nil
}

// WaveEnds is, for n members ordered, the end (exclusive) of each wave's share: wave i holds
// members [WaveEnds[i-1], WaveEnds[i]). Percents are cumulative and rounded up, so every wave
// holds at least one member while members remain.
func WaveEnds(n int, waves []RolloutWave) []int {
	ends := make([]int, len(waves))
	prev := 0
	for i, w := range waves {
		end := int(math.Ceil(float64(n) * w.Percent / 100))
		end = max(end, prev+1)
		end = min(end, n)
		ends[i], prev = end, end
	}
	return ends
}

// RolloutGroup is a group as get and list report it.
type RolloutGroup struct {
	GroupID string `json:"group_id"`
	State   string `json:"state"`
	// Reason says why the group is where it is: why it aborted, what it waits for.
	Reason  string             `json:"reason,omitempty"`
	Wave    int                `json:"wave"`
	Waves   []RolloutGroupWave `json:"waves"`
	Budgets RolloutGroupBudget `json:"budgets"`
	Spec    RolloutGroupSpec   `json:"spec"`
	// WaveOpensAt (Unix nanoseconds) is when the current wave may start, during the pause
	// between waves.
	WaveOpensAt int64 `json:"wave_opens_at,omitempty"`
	CreatedAt   int64 `json:"created_at"`
	FinishedAt  int64 `json:"finished_at,omitempty"`
}

// RolloutGroupWave is one wave of a group and its members, in order.
type RolloutGroupWave struct {
	Percent float64 `json:"percent"`
	State   string  `json:"state"`
	// Counts are the wave's members by state; list reports them without the members.
	Counts  map[string]int       `json:"counts"`
	Members []RolloutGroupMember `json:"members,omitempty"`
}

// RolloutGroupMember is one member of a group.
type RolloutGroupMember struct {
	ProcessGUID string `json:"process_guid"`
	State       string `json:"state"`
	// DefinitionID is the definition the member rolls to, once its rollout started.
	DefinitionID string `json:"definition_id,omitempty"`
	RolloutID    string `json:"rollout_id,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// RolloutGroupBudget is what a group's budgets have in use now.
type RolloutGroupBudget struct {
	LRPsInUse            int   `json:"lrps_in_use"`
	MaxConcurrentLRPs    int32 `json:"max_concurrent_lrps"`
	PerCellMaxInUse      int   `json:"per_cell_max_in_use"`
	MaxConcurrentPerCell int32 `json:"max_concurrent_per_cell"`
}

// Wave states, as get reports them (from their members and the group's state).
const (
	WavePending   = "pending"
	WaveRolling   = "rolling"
	WaveCompleted = "completed"
	WaveAborted   = "aborted"
	WaveSkipped   = "skipped"
)

// WaveState is the state of wave i of a group in groupState at wave current, whose members
// are in the given states.
func WaveState(i, current int, groupState string, members []RolloutGroupMember) string {
	rolling, open := false, false
	for _, m := range members {
		switch m.State {
		case MemberRolling:
			rolling = true
		case MemberPending:
			open = true
		}
	}
	switch {
	case rolling:
		return WaveRolling
	case i > current:
		if groupState == GroupAborted {
			return WaveSkipped
		}
		return WavePending
	case i == current && groupState == GroupAborted:
		return WaveAborted
	case open && i == current && RolloutGroupInProgress(groupState):
		return WaveRolling
	default:
		return WaveCompleted
	}
}

// RolloutGroupWorkflowID is the id of a group's Temporal workflow.
func RolloutGroupWorkflowID(groupID string) string { return "rollout-group:" + groupID }

// RolloutGroupControl kinds (POST /v1/rollout_groups/{pause,resume,abort}).
const (
	GroupControlPause  = "pause"
	GroupControlResume = "resume"
	GroupControlAbort  = "abort"
)
