package sshproxy

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func addr(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000} }

// fail records one failed login.
func fail(t *testing.T, l *limiter, remote, user string) {
	t.Helper()
	end, refusal := l.begin(limitKeys(addr(remote), user))
	if refusal != nil {
		t.Fatalf("%s from %s refused early: %v", user, remote, refusal)
	}
	end(true)
}

func refused(l *limiter, remote, user string) string {
	end, refusal := l.begin(limitKeys(addr(remote), user))
	if refusal == nil {
		end(false)
		return ""
	}
	return refusal.Message
}

func TestLimiterPerAddressAndPerUser(t *testing.T) {
	c := &clock{time.Unix(1_700_000_000, 0)}
	l := newLimiter(5, time.Minute, c.now)
	// Per address: five users from one address.
	for i := range 5 {
		fail(t, l, "10.0.0.1", fmt.Sprintf("diego:app%d/0", i))
		c.t = c.t.Add(time.Second)
	}
	if got := refused(l, "10.0.0.1", "diego:fresh/0"); got != "too many failed logins from 10.0.0.1: try again in 55s" {
		t.Fatalf("the sixth from the address: %q", got)
	}
	if got := refused(l, "10.0.0.2", "diego:fresh/0"); got != "" {
		t.Fatalf("another address: %q", got)
	}
	// It cools as the oldest failure leaves the window: one more try, then limited again.
	c.t = c.t.Add(55 * time.Second)
	fail(t, l, "10.0.0.1", "diego:fresh/1")
	if got := refused(l, "10.0.0.1", "diego:fresh/0"); !strings.HasPrefix(got, "too many failed logins from 10.0.0.1: try again in 1s") {
		t.Fatalf("after the first cooled: %q", got)
	}

	// Per user, whatever the index and the address.
	for i := range 5 {
		fail(t, l, fmt.Sprintf("192.0.2.%d", i), fmt.Sprintf("cf:app-x/%d", i))
	}
	if got := refused(l, "192.0.2.200", "cf:app-x/7"); got != `too many failed logins for user "cf:app-x": try again in 1m0s` {
		t.Fatalf("the sixth for the user: %q", got)
	}
	if got := refused(l, "192.0.2.200", "cf:app-y/0"); got != "" {
		t.Fatalf("another user: %q", got)
	}
	c.t = c.t.Add(time.Minute)
	if got := refused(l, "192.0.2.200", "cf:app-x/7"); got != "" {
		t.Fatalf("after the window: %q", got)
	}
}

// A login is charged while it runs: logins in flight at once count, and one that does not
// fail is refunded.
func TestLimiterCountsLoginsInFlight(t *testing.T) {
	c := &clock{time.Unix(1_700_000_000, 0)}
	l := newLimiter(3, time.Minute, c.now)
	var ends []func(bool)
	for i := range 3 {
		end, refusal := l.begin(limitKeys(addr("10.0.0.1"), fmt.Sprintf("diego:a%d/0", i)))
		if refusal != nil {
			t.Fatal(refusal)
		}
		ends = append(ends, end)
	}
	if got := refused(l, "10.0.0.1", "diego:b/0"); got == "" {
		t.Fatal("a fourth login while three are in flight")
	}
	for _, end := range ends {
		end(false)
	}
	if got := refused(l, "10.0.0.1", "diego:b/0"); got != "" {
		t.Fatalf("after three good logins: %q", got)
	}
	if len(l.failures) != 0 {
		t.Fatalf("refunds left %v", l.failures)
	}
}

// Whatever names are tried, the limiter keeps at most maxLimitKeys keys, dropping the
// stalest first.
func TestLimiterIsBounded(t *testing.T) {
	c := &clock{time.Unix(1_700_000_000, 0)}
	l := newLimiter(5, time.Hour, c.now)
	for i := range maxLimitKeys {
		c.t = c.t.Add(time.Millisecond)
		fail(t, l, fmt.Sprintf("10.%d.%d.1", i/256, i%256), fmt.Sprintf("diego:u%d/0", i))
		if i == 0 {
			for range 4 {
				fail(t, l, "10.9.9.9", "diego:u0/0")
			}
		}
	}
	if len(l.failures) > maxLimitKeys {
		t.Fatalf("%d keys", len(l.failures))
	}
	if _, ok := l.failures["user diego:u0"]; ok {
		t.Error("the stalest key was kept")
	}
	if _, ok := l.failures[fmt.Sprintf("address 10.%d.%d.1", (maxLimitKeys-1)/256, (maxLimitKeys-1)%256)]; !ok {
		t.Error("the freshest key was dropped")
	}
}

func TestLimitKeys(t *testing.T) {
	for _, tc := range []struct{ remote, user, addr, usr string }{
		{"10.0.0.1", "cf:app/12", "address 10.0.0.1", "user cf:app"},
		{"2001:db8::1", "diego:web/0", "address 2001:db8::1", "user diego:web"},
		{"10.0.0.1", "root", "address 10.0.0.1", "user root"},
		{"10.0.0.1", "a/b/x", "address 10.0.0.1", "user a/b/x"},
		{"10.0.0.1", strings.Repeat("x", 400), "address 10.0.0.1", "user " + strings.Repeat("x", 300)},
	} {
		a, u := limitKeys(addr(tc.remote), tc.user)
		if a != tc.addr || u != tc.usr {
			t.Errorf("limitKeys(%s, %q) = %q, %q", tc.remote, tc.user, a, u)
		}
	}
}
