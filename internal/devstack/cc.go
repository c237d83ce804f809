package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/tpswatcher"
	"go.uber.org/zap"
)

// devCC is a stand-in for Cloud Controller's internal API: it logs what the tps-watcher
// reports, one line per request, to a file, and answers 200.
type devCC struct {
	srv  *http.Server
	URL  string
	file string
}

// startDevCC serves the stand-in on a loopback port of its own, appending to logFile.
func startDevCC(logFile string, log *zap.Logger) (*devCC, error) {
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Close()
		return nil, err
	}
	var mu sync.Mutex
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		fmt.Fprintf(f, "%s %s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), r.Method, r.URL.Path, body)
		mu.Unlock()
	})}
	srv.RegisterOnShutdown(func() { f.Close() })
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("stand-in Cloud Controller", zap.Error(err))
		}
	}()
	return &devCC{srv: srv, URL: "http://" + ln.Addr().String(), file: logFile}, nil
}

// stop stops serving; the log file is closed with the server.
func (c *devCC) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.srv.Shutdown(ctx)
}

// startTPSWatcher starts the tps-watcher, reporting to Config.CCURL or to a stand-in Cloud
// Controller that logs the reports to <data>/cc.log.
func (s *stack) startTPSWatcher(ctx context.Context) error {
	ccURL, stopCC := s.cfg.CCURL, func() {}
	s.banner.tps = "reports crashes to " + ccURL
	if ccURL == "" {
		cc, err := startDevCC(filepath.Join(s.dir, "cc.log"), s.log)
		if err != nil {
			return err
		}
		ccURL, stopCC = cc.URL, cc.stop
		s.banner.tps = fmt.Sprintf("reports crashes to a stand-in Cloud Controller that logs them to %s (--tps-cc-url for a real one)",
			s.shown("cc.log"))
	}
	w := system.StartTPSWatcher(ctx, system.TPSWatcherConfig{BBS: bbsclient.New(s.api.URL(), nil),
		CC: tpswatcher.NewCCClient(ccURL, nil), Log: s.log})
	s.onStop(func() {
		s.log.Info("stopping the tps-watcher")
		w.Stop()
		stopCC()
	})
	return nil
}
