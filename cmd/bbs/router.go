package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"net/http"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/router"
	"go.uber.org/zap"
)

// runRouterCommand runs the router and its route emitter.
func runRouterCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("router", flag.ContinueOnError)
	listenAddr := fs.String("listen", envOr("BBS_ROUTER_LISTEN_ADDR", "127.0.0.1:8080"), "where apps are served, by Host header [BBS_ROUTER_LISTEN_ADDR]")
	adminAddr := fs.String("admin-listen", envOr("BBS_ROUTER_ADMIN_ADDR", "127.0.0.1:8081"), "GET /stats and /routes [BBS_ROUTER_ADMIN_ADDR]")
	apiURL := fs.String("api-url", envOr("BBS_API_URL", "http://127.0.0.1:8889"), "the BBS API [BBS_API_URL]")
	logLevel := logLevelFlag(fs)
	var peerTLS clientTLSFlags
	peerTLS.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, false)
	if err != nil {
		return err
	}
	defer log.Sync()
	apiTLS, err := peerTLS.config()
	if err != nil {
		return err
	}
	r, err := startRouter(ctx, *listenAddr, *adminAddr, bbsclient.New(*apiURL, apiTLS), log)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return r.stop()
}

// runningRouter is a router being served.
type runningRouter struct {
	servers []*http.Server
	addr    string
}

// startRouter serves apps on listen and the router's own stats on admin, following the BBS.
func startRouter(ctx context.Context, listen, admin string, bbs *bbsclient.Client, log *zap.Logger) (*runningRouter, error) {
	table := router.NewTable()
	emitter := &router.Emitter{BBS: bbs, Table: table, Log: log.Named("route-emitter")}
	go emitter.Run(ctx)
	proxy := router.NewProxy(table)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(proxy.Stats())
	})
	rr := &runningRouter{}
	for _, s := range []struct {
		addr string
		h    http.Handler
	}{{listen, proxy}, {admin, mux}} {
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			rr.stop()
			return nil, err
		}
		if rr.addr == "" {
			rr.addr = ln.Addr().String()
		}
		srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second}
		rr.servers = append(rr.servers, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("router", zap.Error(err))
			}
		}()
	}
	log.Info("router listening", zap.String("apps", listen), zap.String("admin", admin))
	return rr, nil
}

func (r *runningRouter) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, s := range r.servers {
		errs = append(errs, s.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
