package system

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/metrics"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/router"
	"go.uber.org/zap"
)

// RouterConfig is what the router process is made of.
type RouterConfig struct {
	// Listen serves apps by Host header; Admin serves GET /stats and GET /metrics.
	Listen, Admin string
	// BBS is the API whose LRPs it routes to.
	BBS *bbsclient.Client
	// Metrics, when set, is the process's registry: the router registers its series there
	// and its admin listener serves all of it at /metrics (nil: a registry of its own).
	Metrics *prometheus.Registry
	Log     *zap.Logger
	// ID names the router in its reports to the BBS (default: host name and listen port).
	ID string
}

// Router is a running router.
type Router struct {
	servers []*servedHTTP
	cancel  context.CancelFunc
	emitter chan struct{}
	table   *router.Table
	// Addr is where apps are served.
	Addr string
}

// Applied is the generation of guid's traffic split the router routes by (0: never split).
func (r *Router) Applied(guid string) int64 { return r.table.Applied()[guid] }

// StartRouter serves apps and the router's own stats, following the BBS's event stream.
func StartRouter(ctx context.Context, cfg RouterConfig) (*Router, error) {
	log := cfg.Log
	table := router.NewTable()
	proxy := router.NewProxy(table)
	id := cfg.ID
	if id == "" {
		id = defaultRouterID(cfg.Listen)
	}
	reporter := router.NewReporter(cfg.BBS, table, proxy.Telemetry, id, log.Named("router-reporter"))
	emitter := &router.Emitter{BBS: cfg.BBS, Table: table, Log: log.Named("route-emitter"), Applied: reporter.Poke,
		Removed: proxy.Telemetry.Forget}
	ctx, cancel := context.WithCancel(ctx)
	rr := &Router{cancel: cancel, emitter: make(chan struct{}), table: table}
	go func() {
		defer close(rr.emitter)
		done := make(chan struct{})
		go func() { defer close(done); reporter.Run(ctx) }()
		emitter.Run(ctx)
		<-done
	}()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(proxy.Stats())
	})
	mux.HandleFunc("GET /telemetry", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(routerTelemetry{RouterID: id, Applied: table.Applied(), Telemetry: proxy.Telemetry.Snapshot()})
	})
	reg := cfg.Metrics
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	metrics.RegisterRouter(reg, metrics.RouterStats{Requests: proxy.Requests.Load, Retries: proxy.Retries.Load,
		Failures: proxy.Failures.Load, Routes: func() int { return len(table.Hosts()) }, Telemetry: proxy.Telemetry.Snapshot})
	mux.Handle("GET /metrics", metrics.Handler(reg))
	// The apps' side is the edge of the platform, public by design (as Cloud Foundry's
	// gorouter); the admin side follows Listen's rule (loopback: the router has no TLS).
	appLn, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		rr.Stop()
		return nil, err
	}
	rr.Addr = appLn.Addr().String()
	rr.servers = append(rr.servers, serveHTTP(appLn, "http", proxy, log))
	adminLn, scheme, err := Listen(cfg.Admin, nil)
	if err != nil {
		rr.Stop()
		return nil, err
	}
	rr.servers = append(rr.servers, serveHTTP(adminLn, scheme, mux, log))
	log.Info("router listening", zap.String("apps", cfg.Listen), zap.String("admin", cfg.Admin))
	return rr, nil
}

// Stop stops serving and following the BBS.
func (r *Router) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, s := range r.servers {
		errs = append(errs, s.stop(ctx))
	}
	r.cancel()
	<-r.emitter
	return errors.Join(errs...)
}

// routerTelemetry is GET /telemetry on the router's admin port: what it routes by and its
// counts per LRP and definition since it started.
type routerTelemetry struct {
	RouterID  string                 `json:"router_id"`
	Applied   map[string]int64       `json:"applied"`
	Telemetry []model.RouteTelemetry `json:"telemetry"`
}

// defaultRouterID names a router by its host and the port it serves apps on, which tells
// apart the routers of one host.
func defaultRouterID(listen string) string {
	host, _ := os.Hostname()
	_, port, _ := net.SplitHostPort(listen)
	id := strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_.:-", r)) {
			return r
		}
		return '-'
	}, host+":"+port)
	return id[:min(len(id), 128)]
}
