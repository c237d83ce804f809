package temporaltest

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a helper ended t instead of ending it.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, a ...any) { r.fatal = fmt.Sprintf(format, a...) }
func (r *recorder) Skipf(format string, a ...any)  { r.skip = fmt.Sprintf(format, a...) }

// Without a temporal CLI a test that needs a server fails, naming what is missing: `go test
// ./...` must not pass while testing half the system. (-short skips instead, and says so.)
func TestMissingTemporalCLIFailsTheTest(t *testing.T) {
	t.Setenv("TEMPORAL_BIN", "/nonexistent/temporal")
	r := &recorder{TB: t}
	Bin(r)
	if testing.Short() {
		if !strings.Contains(r.skip, "-short") || !strings.Contains(r.skip, "/nonexistent/temporal") {
			t.Fatalf("skip message %q", r.skip)
		}
		return
	}
	if r.skip != "" {
		t.Fatalf("skipped: %s", r.skip)
	}
	if !strings.Contains(r.fatal, "needs a Temporal server") || !strings.Contains(r.fatal, "TEMPORAL_BIN=/nonexistent/temporal") {
		t.Fatalf("failure message %q does not name what is missing", r.fatal)
	}
}
