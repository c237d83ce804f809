package model

import (
	"math"
	"time"
)

// RestartPolicy is the crash back-off of ARCHITECTURE.md ("Restart policy") and seed 003
// ("Crashes"). The rep applies it through CrashDance when an instance's container crashes; the
// converger applies it through ShouldRestart to CRASHED instances. Its methods are pure so both
// sides, and their tests, agree on every boundary.
//
// Crash counts below are always the count after the crash has been counted, as stored in
// ActualLRP.CrashCount. With DefaultRestartPolicy:
//
//	count 1, 2, 3     restart at once (back to UNCLAIMED, never CRASHED)
//	count 4           CRASHED, restartable 30 s after the crash
//	count 5, 6, 7, 8  60 s, 2 min, 4 min, 8 min
//	count 9 … 200     16 min
//	count 201 and up  never restarted
//
// This is one count later than BBS's RestartCalculator, which restarts at once only while the
// count is below 3 (so after the first two crashes) and lets the third wait 30 s. We follow the
// seed ("If CrashCount < 3" is tested before the increment, so the first three crashes restart
// at once) and ARCHITECTURE.md ("the first 3 crashes restart at once"); the first delayed crash
// still waits BaseDelay, as in BBS. Likewise the seed says "CrashCount > 200" is never
// restarted, so count 200 itself still is.
type RestartPolicy struct {
	// ImmediateRestarts is how many crashes in a row go straight back to UNCLAIMED: counts 1
	// through ImmediateRestarts restart at once.
	ImmediateRestarts int32
	// MaxRestarts is the highest crash count that is still restarted; an instance whose count
	// exceeds it stays CRASHED until its LRP is changed or removed.
	MaxRestarts int32
	// BaseDelay is the wait of the first crash that is not restarted at once; each further
	// crash doubles it.
	BaseDelay time.Duration
	// MaxDelay caps the wait. With the defaults, 30 s × 2^5 = 16 min, so this cap is exactly
	// ARCHITECTURE.md's "2^min(c−3, 5)" exponent limit.
	MaxDelay time.Duration
	// ResetAfter is how long an instance must have been RUNNING before a crash for its count to
	// start again from zero: a long healthy run means the earlier crashes say nothing about
	// this one.
	ResetAfter time.Duration
}

// DefaultRestartPolicy returns BBS's policy: 3 immediate restarts, then 30 s doubling up to
// 16 min, no restarts after 200 crashes, and a reset after 5 minutes of running.
//
// The zero RestartPolicy never restarts anything (its MaxRestarts is 0), so callers start from
// this one.
func DefaultRestartPolicy() RestartPolicy {
	return RestartPolicy{
		ImmediateRestarts: 3,
		MaxRestarts:       200,
		BaseDelay:         30 * time.Second,
		MaxDelay:          16 * time.Minute,
		ResetAfter:        5 * time.Minute,
	}
}

// CrashDance is the rep's part of a crash (seed 003's RepCrashDance, with the reset of
// ARCHITECTURE.md): given the instance's crash count before this crash, when it became RUNNING
// and the time of the crash, it returns the count to store and whether the instance goes back
// to UNCLAIMED at once (restartNow) or to CRASHED for the converger to restart later.
//
// Pass runningSince as the ActualLRP's Since (time.Unix(0, Since)) only when it is RUNNING;
// pass the zero time, not time.Unix(0, 0), when the instance crashed before it ever ran
// (CLAIMED) or when the start is unknown. BBS resets the count only for RUNNING instances: an
// instance that spends minutes failing to start must keep backing off, not reset on every
// attempt. The reset takes effect when the instance ran at
// least ResetAfter (BBS tests "more than"; the nanosecond does not matter, "ran 5 min" does).
// A reset count restarts as the first crash: it becomes 1, not 0, because this crash counts.
func (p RestartPolicy) CrashDance(crashCount int32, runningSince, now time.Time) (newCount int32, restartNow bool) {
	if crashCount < 0 {
		crashCount = 0
	}
	if !runningSince.IsZero() && !now.IsZero() && now.Sub(runningSince) >= p.ResetAfter {
		crashCount = 0
	}
	newCount = crashCount
	if newCount < math.MaxInt32 { // saturate: a wrapped count would restart a hopeless instance
		newCount++
	}
	_, ok := p.RestartDelay(newCount)
	return newCount, ok && newCount <= p.ImmediateRestarts
}

// RestartDelay returns how long after its crash a CRASHED instance with this count waits before
// the converger may restart it, and ok=false when it must never be restarted (count above
// MaxRestarts). Counts up to ImmediateRestarts (including 0 and below, which no crash produces)
// need no wait. Beyond them the wait is BaseDelay × 2^(count − ImmediateRestarts − 1), at most
// MaxDelay: with the defaults, count 4 waits 30 s and count 9 reaches 16 min.
func (p RestartPolicy) RestartDelay(crashCount int32) (delay time.Duration, ok bool) {
	if crashCount > p.MaxRestarts {
		return 0, false
	}
	if crashCount <= p.ImmediateRestarts {
		return 0, true
	}
	delay = p.BaseDelay
	// Doubling stops at the cap rather than computing 2^exponent, which would overflow a
	// Duration long before count 200.
	for exp := int64(crashCount) - int64(p.ImmediateRestarts) - 1; exp > 0 && delay > 0; exp-- {
		if p.MaxDelay > 0 && delay >= p.MaxDelay {
			break
		}
		if delay > math.MaxInt64/2 {
			delay = math.MaxInt64
			break
		}
		delay *= 2
	}
	if p.MaxDelay > 0 && delay > p.MaxDelay {
		delay = p.MaxDelay
	}
	if delay < 0 {
		delay = 0
	}
	return delay, true
}

// ShouldRestart reports whether the converger restarts a CRASHED instance now: its count is
// restartable and RestartDelay has passed since crashedAt (the CRASHED instance's Since; the
// wait counts as passed at exactly crashedAt + delay, as in BBS). A zero crashedAt means the
// crash time is unknown and is treated as long ago, so an instance that lost its timestamp is
// not stranded; a zero now is compared as given, so it only allows counts that need no wait.
func (p RestartPolicy) ShouldRestart(crashCount int32, crashedAt, now time.Time) bool {
	delay, ok := p.RestartDelay(crashCount)
	if !ok {
		return false
	}
	if delay == 0 {
		return true
	}
	// The zero crashedAt is year 1, long before any real now, so no special case is needed.
	return !now.Before(crashedAt.Add(delay))
}
