package scenario

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// TestRolloutProperties drives random interleavings of what operators and platforms do to a
// rollout — updates to new definitions (some crash-looping, with random strategies), pause,
// resume, abort, set_pace, promote, cancel, and real crashes of instances — over sim cells,
// one seed per subtest, and checks two properties for every seed:
//
//   - availability: no sample of the served indices ever drops below the count (an index
//     whose instance the test itself crashed excepted, until it runs again);
//   - every rollout ends: once the operations stop and a last resume releases any pause, the
//     LRP's latest rollout reaches a final state, and the instances are where that state
//     says — completed: the target at every index it did not give up; canceled or reverted:
//     the definition it started from.
//
// A failing seed is reproduced by its number (BBS_PROPERTY_SEED=n runs that one alone).
func TestRolloutProperties(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4}
	if s := propertySeed(); s != 0 {
		seeds = []uint64{s}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			t.Parallel()
			playProperty(t, seed)
		})
	}
}

func propertySeed() uint64 {
	var s uint64
	fmt.Sscan(os.Getenv("BBS_PROPERTY_SEED"), &s)
	return s
}

// op is one random operation; it returns what it did, for the log of a failing seed.
type op func(c *rolloutCluster, guid string, rng *rand.Rand, next *int) string

var propertyOps = []op{
	func(c *rolloutCluster, guid string, rng *rand.Rand, next *int) string { // a new definition
		*next++
		id := fmt.Sprintf("v%d", *next)
		vars := []model.EnvironmentVariable{env("SIM_START_DELAY_MS", fmt.Sprint(50+rng.IntN(250))), env("VERSION", id)}
		failing := rng.IntN(4) == 0
		if failing {
			vars = append(vars, env("SIM_FAIL_START", "1"))
		}
		strategy := map[string]any{"max_in_flight": 1 + rng.IntN(3),
			"on_failure": []string{"revert", "pause", "continue"}[rng.IntN(3)], "index_deadline_ms": 5000}
		c.updateWithStrategy(guid, id, simDefinition(vars...), strategy)
		return fmt.Sprintf("update to %s (failing %v, strategy %v)", id, failing, strategy)
	},
	func(c *rolloutCluster, guid string, _ *rand.Rand, _ *int) string {
		return control(c, guid, "pause", nil)
	},
	func(c *rolloutCluster, guid string, _ *rand.Rand, _ *int) string {
		return control(c, guid, "resume", nil)
	},
	func(c *rolloutCluster, guid string, _ *rand.Rand, _ *int) string {
		return control(c, guid, "abort", map[string]any{"reason": "property"})
	},
	func(c *rolloutCluster, guid string, rng *rand.Rand, _ *int) string {
		return control(c, guid, "set_pace", map[string]any{"max_in_flight": 1 + rng.IntN(3)})
	},
	func(c *rolloutCluster, guid string, _ *rand.Rand, _ *int) string {
		return control(c, guid, "promote", nil)
	},
	func(c *rolloutCluster, guid string, _ *rand.Rand, _ *int) string {
		err := c.post("/v1/desired_lrp/cancel_update", map[string]string{"process_guid": guid}, nil)
		return "cancel: " + outcome(err, model.ErrNoUpdateInProgress)
	},
}

// control posts a rollout control; the refusals the contract allows are outcomes, any other
// error fails the test. A resume may be refused only as one of a rollout not paused (walking
// or reverting, never paused or resumed), and its message must say so.
func control(c *rolloutCluster, guid, name string, body map[string]any) string {
	req := map[string]any{"process_guid": guid}
	for k, v := range body {
		req[k] = v
	}
	err := c.post("/v1/rollouts/"+name, req, nil)
	did := outcome(err, model.ErrNoRolloutInProgress, model.ErrInvalidPhase)
	if name == "resume" && model.IsType(err, model.ErrInvalidPhase) && !strings.Contains(err.Error(), "not paused") {
		panic(fmt.Sprintf("resume refused for another reason than a rollout not paused: %v", err))
	}
	return name + ": " + did
}

func outcome(err error, allowed ...model.ErrorType) string {
	if err == nil {
		return "ok"
	}
	var ae *apiError
	if errors.As(err, &ae) {
		for _, t := range allowed {
			if model.IsType(ae.err, t) {
				return string(t)
			}
		}
	}
	panic(fmt.Sprintf("unexpected answer: %v", err))
}

func playProperty(t *testing.T, seed uint64) {
	const n = 4
	guid := fmt.Sprintf("prop-%d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	c := newRolloutCluster(t, rolloutOptions{converge: true})
	c.createDeployment(guid, n, "v0", simDefinition())
	c.waitLRP(guid, "4 RUNNING on v0", 20*time.Second, func() bool { return c.allOn(guid, "v0", n) })
	s := c.sample(guid, n)
	var log []string
	defer func() { t.Logf("seed %d did:\n%s", seed, joinLines(log)) }()
	next, out := 0, crashed{}
	for step := range 10 {
		var did string
		if step > 0 && rng.IntN(5) == 0 {
			did = crashOne(c, s, guid, rng, out)
		} else {
			i := rng.IntN(len(propertyOps))
			if step == 0 {
				i = 0 // begin with an update
			}
			did = propertyOps[i](c, guid, rng, &next)
		}
		log = append(log, fmt.Sprintf("%d: %s", step, did))
		time.Sleep(time.Duration(100+rng.IntN(600)) * time.Millisecond)
		out.recover(c, s, guid)
	}
	// The operators leave: a paused rollout is released, and the walk must end by itself.
	log = append(log, "end: "+control(c, guid, "resume", nil))
	var r model.Rollout
	c.waitLRP(guid, "the latest rollout to end", 90*time.Second, func() bool {
		r = c.rollout(guid)
		if r.State == model.RolloutPaused || (r.State == model.RolloutCanceling && r.RevertFailure != nil) {
			control(c, guid, "resume", nil) // a pause that came with the last signals
		}
		return !r.InProgress()
	})
	log = append(log, fmt.Sprintf("ended %s (%s → %s), given up %v, failure %+v", r.State, r.FromDefinitionID, r.ToDefinitionID, r.GivenUpIndices, r.Failure))
	want := func(i int32) string {
		if r.State == model.RolloutCompleted && !slices.Contains(r.GivenUpIndices, i) {
			return r.ToDefinitionID
		}
		return r.FromDefinitionID
	}
	switch r.State {
	case model.RolloutCompleted, model.RolloutCanceled, model.RolloutReverted:
	default:
		t.Fatalf("the latest rollout ended %s", r.State)
	}
	c.waitLRP(guid, "every index where the rollout's end says", 40*time.Second, func() bool {
		for i := range int32(n) {
			if a := c.instanceOf(guid, want(i), i); a == nil || a.State != model.StateRunning || a.Retiring {
				return false
			}
		}
		return len(c.instances(guid)) == n
	})
	out.recover(c, s, guid)
	s.finish(t)
}

// crashed are the instances the test crashed, whose indices the availability check leaves
// out until another instance runs there.
type crashed map[int32]string

// crashOne crashes a RUNNING instance for real (its action exits), excluding its index from
// the availability check until it runs again (recover): a crash is downtime at its index
// whatever the rollout does.
func crashOne(c *rolloutCluster, s *sampler, guid string, rng *rand.Rand, out crashed) string {
	var running []model.ActualLRP
	for _, a := range c.instances(guid) {
		if a.State == model.StateRunning && !a.Retiring && out[a.Index] == "" {
			running = append(running, a)
		}
	}
	if len(running) == 0 {
		return "crash: nothing to crash"
	}
	victim := running[rng.IntN(len(running))]
	s.exclude(victim.Index)
	if !c.chaos.crash(victim.InstanceGUID) {
		s.include(victim.Index)
		return "crash: gone already"
	}
	out[victim.Index] = victim.InstanceGUID
	return fmt.Sprintf("crash %s at index %d", victim.DefinitionID, victim.Index)
}

// recover counts an index the test crashed again once another instance runs there.
func (out crashed) recover(c *rolloutCluster, s *sampler, guid string) {
	for _, a := range c.instances(guid) {
		if g, ok := out[a.Index]; ok && a.State == model.StateRunning && !a.Retiring && a.InstanceGUID != g {
			s.include(a.Index)
			delete(out, a.Index)
		}
	}
}
