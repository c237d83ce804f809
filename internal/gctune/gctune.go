// Package gctune sets how often the Go garbage collector runs in the processes of the BBS and
// in the Temporal servers it starts. Their live heaps are small (tens of MiB) and churn fast,
// so at Go's default (a collection each time the heap doubles) the collector took 7–11 % of
// every process's CPU under 1,000 rollouts; a collection each time the heap grows fivefold
// costs a few dozen MiB (the API's peak while it lists 250,000 instances: 36 → 50 MiB) and
// bought ~5.5 % of our CPU and of the dev server's per rollout step, and a faster fleet list
// (docs/BENCHMARKS.md, session 11). An operator's own GOGC (or GOMEMLIMIT) always wins.
package gctune

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Percent is the heap growth, in per cent of the live heap, that starts a collection
// (GOGC).
const Percent = 400

// Apply sets this process's collector to Percent, unless GOGC or GOMEMLIMIT is set: the
// operator has chosen then.
func Apply() {
	if chosen(os.Environ()) {
		return
	}
	debug.SetGCPercent(Percent)
}

// Env returns env (a child's environment, as os.Environ gives it) with GOGC=Percent added,
// unless it sets GOGC or GOMEMLIMIT already.
func Env(env []string) []string {
	if chosen(env) {
		return env
	}
	return append(env[:len(env):len(env)], "GOGC="+strconv.Itoa(Percent))
}

func chosen(env []string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMEMLIMIT=") {
			return true
		}
	}
	return false
}
