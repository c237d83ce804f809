package system

import (
	"context"

	"github.com/updatable-lrps/bbs/tpswatcher"
	"go.uber.org/zap"
)

// TPSWatcherConfig is what the tps-watcher process is made of.
type TPSWatcherConfig struct {
	BBS tpswatcher.BBS
	CC  tpswatcher.CC
	Log *zap.Logger
}

// TPSWatcher is a running tps-watcher.
type TPSWatcher struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// StartTPSWatcher follows the BBS's events and reports crashes to Cloud Controller.
func StartTPSWatcher(ctx context.Context, cfg TPSWatcherConfig) *TPSWatcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &TPSWatcher{cancel: cancel, done: make(chan struct{})}
	watcher := &tpswatcher.Watcher{BBS: cfg.BBS, CC: cfg.CC, Log: cfg.Log.Named("tps-watcher")}
	go func() { defer close(w.done); watcher.Run(ctx) }()
	return w
}

// Stop stops following and waits for the reports in flight.
func (w *TPSWatcher) Stop() {
	w.cancel()
	<-w.done
}
