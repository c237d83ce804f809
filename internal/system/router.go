package system

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/router"
	"go.uber.org/zap"
)

// RouterConfig is what the router process is made of.
type RouterConfig struct {
	// Listen serves apps by Host header; Admin serves GET /stats.
	Listen, Admin string
	// BBS is the API whose LRPs it routes to.
	BBS *bbsclient.Client
	Log *zap.Logger
}

// Router is a running router.
type Router struct {
	servers []*http.Server
	// Addr is where apps are served.
	Addr string
}

// StartRouter serves apps and the router's own stats, following the BBS's event stream.
func StartRouter(ctx context.Context, cfg RouterConfig) (*Router, error) {
	log := cfg.Log
	table := router.NewTable()
	emitter := &router.Emitter{BBS: cfg.BBS, Table: table, Log: log.Named("route-emitter")}
	go emitter.Run(ctx)
	proxy := router.NewProxy(table)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(proxy.Stats())
	})
	rr := &Router{}
	for _, s := range []struct {
		addr string
		h    http.Handler
	}{{cfg.Listen, proxy}, {cfg.Admin, mux}} {
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			rr.Stop()
			return nil, err
		}
		if rr.Addr == "" {
			rr.Addr = ln.Addr().String()
		}
		srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second}
		rr.servers = append(rr.servers, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("router", zap.Error(err))
			}
		}()
	}
	log.Info("router listening", zap.String("apps", cfg.Listen), zap.String("admin", cfg.Admin))
	return rr, nil
}

// Stop stops serving.
func (r *Router) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, s := range r.servers {
		errs = append(errs, s.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
