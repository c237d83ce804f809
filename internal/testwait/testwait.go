// Package testwait is the one way tests wait for the system to get somewhere: poll a
// condition until it holds, and fail the test, saying what was awaited, when it does not
// within a deadline.
package testwait

import (
	"testing"
	"time"
)

// Until checks cond at once and then every `every` until it returns true; when it has not
// within `within`, it fails t with "timed out after <within> waiting for <what>".
func Until(t testing.TB, within, every time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(every)
	}
}
