package supervise

import (
	"errors"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/testwait"
	"go.uber.org/zap"
)

// A child killed after it ran for a while, time and again (by an operator, a fault
// injector), is restarted every time: only deaths within MinUptime of a start count toward
// giving up, so that `bbs cluster` does not stop the whole cluster after the sixth kill of a
// healthy process (as it did under the chaos matrix). One that dies young still does.
func TestOnlyYoungDeathsCountTowardGivingUp(t *testing.T) {
	p := quick
	p.MinUptime = 30 * time.Millisecond
	st := &starter{}
	first := newFake(1)
	s := Watch("cell-2", first, st.start, p, zap.NewNop())
	defer s.Stop()
	time.Sleep(40 * time.Millisecond)
	first.die(errors.New("signal: killed"))
	for n := 1; n <= 2*p.Burst; n++ {
		testwait.Until(t, 5*time.Second, time.Millisecond, "a restart", func() bool { return st.count() == n })
		time.Sleep(40 * time.Millisecond) // up for longer than MinUptime
		st.last().die(errors.New("signal: killed"))
	}
	select {
	case <-s.Failed():
		t.Fatalf("gave up on a child that ran each time: %v", s.Err())
	case <-time.After(100 * time.Millisecond):
	}

	// Dying at once after each start is a crash loop.
	for n := 2*p.Burst + 1; ; n++ {
		select {
		case <-s.Failed():
			return
		case <-time.After(5 * time.Second):
			t.Fatal("never gave up on a child that dies as it starts")
		default:
		}
		if st.count() == n {
			st.last().die(errors.New("exit status 1"))
		} else {
			time.Sleep(time.Millisecond)
			n--
		}
	}
}
