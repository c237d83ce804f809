package cell

import (
	"context"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// flakyBBS refuses the first heartbeats, as a BBS whose database is restarting does.
type flakyBBS struct {
	BBS
	refuse, calls int
}

func (f *flakyBBS) Heartbeat(context.Context, model.CellPresence, time.Duration) error {
	f.calls++
	if f.calls <= f.refuse {
		return &model.Error{Type: model.ErrUnavailable, Message: "database unavailable"}
	}
	return nil
}

// A cell that starts while the BBS cannot take its announcement tries again until it does,
// rather than exiting (and being restarted by its supervisor until that gives up on it).
func TestACellAnnouncesItselfOnceTheBBSAnswers(t *testing.T) {
	bbs := &flakyBBS{refuse: 3}
	a := New(Config{ID: "cell-1", Zone: "z1"}, bbs, nil, zap.NewNop())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.announce(ctx); err != nil {
		t.Fatalf("announce: %v", err)
	}
	if bbs.calls != 4 {
		t.Errorf("%d heartbeats, want 4 (3 refused)", bbs.calls)
	}

	stopped, stop := context.WithCancel(context.Background())
	stop()
	if err := New(Config{ID: "cell-2"}, &flakyBBS{refuse: 100}, nil, zap.NewNop()).announce(stopped); err == nil {
		t.Error("announce succeeded after its context ended")
	}
}
