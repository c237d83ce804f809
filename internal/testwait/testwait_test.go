package testwait

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, a ...any) { r.fatal = fmt.Sprintf(format, a...); panic(r) }

func TestUntil(t *testing.T) {
	calls := 0
	Until(t, time.Second, time.Millisecond, "the third call", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Fatalf("cond called %d times", calls)
	}

	r := &recorder{TB: t}
	func() {
		defer func() { recover() }()
		Until(r, 20*time.Millisecond, time.Millisecond, "never", func() bool { return false })
	}()
	if !strings.Contains(r.fatal, "timed out after 20ms waiting for never") {
		t.Fatalf("failure %q", r.fatal)
	}
}
