package sshproxy

import (
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of the failed-login limit: five failures a minute from one address or for one
// user, then refusals until the oldest failure is a minute old.
const (
	DefaultMaxFailedLogins    = 5
	DefaultFailedLoginsWindow = time.Minute
	// maxLimitKeys bounds the limiter's memory whatever the names tried.
	maxLimitKeys = 10000
)

// limiter counts failed logins per source address and per user in a sliding window. A
// login is charged when it starts and refunded when it turns out no failure, so that
// logins in flight at once count too: a client cannot race many guesses past the limit.
type limiter struct {
	max    int
	window time.Duration
	now    func() time.Time

	mu       sync.Mutex
	failures map[string][]time.Time // oldest first, all within the window
}

func newLimiter(max int, window time.Duration, now func() time.Time) *limiter {
	if max <= 0 {
		max = DefaultMaxFailedLogins
	}
	if window <= 0 {
		window = DefaultFailedLoginsWindow
	}
	if now == nil {
		now = time.Now
	}
	return &limiter{max: max, window: window, now: now, failures: map[string][]time.Time{}}
}

// limitKeys are what a login is counted under: its source address (without the port) and
// its user (without the index, so that trying every index of an app is one user).
func limitKeys(remote net.Addr, user string) (addr, usr string) {
	host := remote.String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if i := strings.LastIndexByte(user, '/'); i >= 0 && strings.Trim(user[i+1:], "0123456789") == "" {
		user = user[:i]
	}
	if len(user) > 300 {
		user = user[:300]
	}
	return "address " + host, "user " + user
}

// begin charges a login to the address and the user, or refuses it while either has had
// max failures within the window. end(failed) settles the charge: refunded unless failed.
func (l *limiter) begin(addrKey, userKey string) (end func(failed bool), refusal *Refusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, k := range []string{addrKey, userKey} {
		if f := l.recent(k, now); len(f) >= l.max {
			wait := f[len(f)-l.max].Add(l.window).Sub(now).Round(time.Second)
			what := "from " + strings.TrimPrefix(k, "address ")
			if strings.HasPrefix(k, "user ") {
				what = "for user " + quote(strings.TrimPrefix(k, "user "))
			}
			return nil, &Refusal{Message: "too many failed logins " + what + ": try again in " + max(wait, time.Second).String()}
		}
	}
	l.charge(addrKey, now)
	l.charge(userKey, now)
	return func(failed bool) {
		if failed {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.refund(addrKey, now)
		l.refund(userKey, now)
	}, nil
}

// recent drops the key's failures older than the window and returns the rest.
func (l *limiter) recent(k string, now time.Time) []time.Time {
	f := l.failures[k]
	i := 0
	for i < len(f) && !f[i].Add(l.window).After(now) {
		i++
	}
	if i == len(f) {
		delete(l.failures, k)
		return nil
	}
	l.failures[k] = f[i:]
	return f[i:]
}

func (l *limiter) charge(k string, now time.Time) {
	if _, ok := l.failures[k]; !ok && len(l.failures) >= maxLimitKeys {
		l.sweep(now)
	}
	l.failures[k] = append(l.failures[k], now)
}

func (l *limiter) refund(k string, at time.Time) {
	f := l.failures[k]
	for i := len(f) - 1; i >= 0; i-- {
		if f[i].Equal(at) {
			f = append(f[:i], f[i+1:]...)
			break
		}
	}
	if len(f) == 0 {
		delete(l.failures, k)
	} else {
		l.failures[k] = f
	}
}

// sweep makes room: it drops what the window has passed and, if the map is still full,
// the keys whose last failure is oldest, down to three quarters of the bound.
func (l *limiter) sweep(now time.Time) {
	for k := range l.failures {
		l.recent(k, now)
	}
	if len(l.failures) < maxLimitKeys*3/4 {
		return
	}
	keys := make([]string, 0, len(l.failures))
	for k := range l.failures {
		keys = append(keys, k)
	}
	last := func(k string) time.Time { f := l.failures[k]; return f[len(f)-1] }
	slices.SortFunc(keys, func(a, b string) int { return last(a).Compare(last(b)) })
	for _, k := range keys[:len(keys)-maxLimitKeys*3/4+1] {
		delete(l.failures, k)
	}
}
