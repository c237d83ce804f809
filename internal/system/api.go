package system

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"github.com/updatable-lrps/bbs/analysis"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/events"
	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol"
	"github.com/updatable-lrps/bbs/tasks"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
)

// RolloutOptions tune the rollouts a process starts (the API) or resumes (the worker).
type RolloutOptions struct {
	// MaxInFlight is how many indices a rollout replaces at once; 0 means 1.
	MaxInFlight int
	// IndexDeadline is how long an index of a proven definition may take to start before it
	// is given up; 0 means workflows.DefaultIndexDeadline.
	IndexDeadline time.Duration
	// AnalysisWebhook, when set, is an HTTP endpoint canary analysis asks beside the
	// routers' telemetry (analysis.Webhook); the worker's setting.
	AnalysisWebhook string
}

// analysisProviders are the providers the worker's analysis asks beside the telemetry.
func (o RolloutOptions) analysisProviders() []analysis.Provider {
	if o.AnalysisWebhook == "" {
		return nil
	}
	return []analysis.Provider{&analysis.Webhook{URL: o.AnalysisWebhook}}
}

func (o RolloutOptions) client(c client.Client, taskQueue string) *workflows.RolloutClient {
	return &workflows.RolloutClient{Client: c, TaskQueue: taskQueueOr(taskQueue),
		MaxInFlight: o.MaxInFlight, IndexDeadline: o.IndexDeadline}
}

// APIConfig is what an API process is made of.
type APIConfig struct {
	Store *db.Store
	// Listener serves the JSON API (see Listen); Scheme is "http" or "https" accordingly.
	Listener net.Listener
	Scheme   string
	// ProtocolListener, when set, serves the BBS's own protobuf protocol (package protocol)
	// over the same store; ProtocolScheme is its scheme.
	ProtocolListener net.Listener
	ProtocolScheme   string
	// ProtocolTLSListener, when set, serves the protocol (too), over mutual TLS (it wraps TLS
	// itself): the dev stack offers plain HTTP on loopback for most clients and https for
	// cfdot, which speaks nothing else.
	ProtocolTLSListener net.Listener
	// Cells reaches the cells to stop instances.
	Cells *cellapi.Client
	// Temporal starts and signals rollouts (a lazy client: the API serves while Temporal is
	// away); TaskQueue is where they run ("" means worker.TaskQueue).
	Temporal  client.Client
	TaskQueue string
	Rollouts  RolloutOptions
	// Events tunes the event stream's hub (zero values: its defaults).
	Events events.Options
	// MaxTaskRetries is how often a task may be rejected before it fails (0: BBS's 3).
	MaxTaskRetries int
	// Metrics, when set, is the process's registry: the API registers its series there and
	// serves all of it at /metrics (nil: a registry of the API's own).
	Metrics *prometheus.Registry
	Log     *zap.Logger
}

// API is a running API process.
type API struct {
	// Server is the JSON API's HTTP handler.
	Server   *api.Server
	json     *servedHTTP
	protocol *servedHTTP
	// protocolTLS is the protocol's second, mutual-TLS listener (ProtocolTLSListener).
	protocolTLS *servedHTTP
	cancel      context.CancelFunc
	hub         sync.WaitGroup
}

// StartAPI serves the API on cfg.Listener. It answers Unavailable until the migrations, which
// it applies under an advisory lock, are in place; it returns once they are.
func StartAPI(ctx context.Context, cfg APIConfig) (*API, error) {
	log := cfg.Log
	hub := events.NewHub(cfg.Store, cfg.Store.Notifications(), cfg.Events, log)
	stopper := &cellapi.Stopper{Cells: cfg.Store, Client: cfg.Cells}
	// One service of each kind for both APIs: a change made through one is made by the same
	// rules as through the other, and a task desired through one is the task of the other.
	lrpService := lrps.NewService(cfg.Store, stopper, cfg.Rollouts.client(cfg.Temporal, cfg.TaskQueue), log)
	if cfg.Temporal != nil {
		lrpService.WithGroups(cfg.Store, &workflows.GroupClient{Client: cfg.Temporal, TaskQueue: taskQueueOr(cfg.TaskQueue)})
	}
	taskService := tasks.NewService(cfg.Store, stopper, cmp.Or(cfg.MaxTaskRetries, model.DefaultMaxTaskRetries), log)
	server := api.NewServer(api.Deps{Store: cfg.Store, LRPs: lrpService, Tasks: taskService, Events: hub, Metrics: cfg.Metrics, Log: log})
	ctx, cancel := context.WithCancel(ctx)
	a := &API{
		Server: server,
		json:   serveHTTP(cfg.Listener, cmp.Or(cfg.Scheme, "http"), server, log),
		cancel: cancel,
	}
	var protocolServer *protocol.Server
	if cfg.ProtocolListener != nil || cfg.ProtocolTLSListener != nil {
		protocolServer = protocol.NewServer(protocol.Deps{Store: cfg.Store, LRPs: lrpService, Tasks: taskService, Events: hub, Groups: cfg.Store, Log: log})
		serve := func(ln net.Listener, scheme string) *servedHTTP {
			if ln == nil {
				return nil
			}
			s := serveHTTP(ln, scheme, protocolServer, log)
			// Shutting down waits for the handlers, and an event stream's ends only when told.
			s.srv.RegisterOnShutdown(protocolServer.CloseStreams)
			return s
		}
		a.protocol = serve(cfg.ProtocolListener, cmp.Or(cfg.ProtocolScheme, "http"))
		a.protocolTLS = serve(cfg.ProtocolTLSListener, "https")
	}
	if err := cfg.Store.Migrate(ctx); err != nil {
		a.Stop()
		return nil, err
	}
	a.hub.Add(1)
	go func() {
		defer a.hub.Done()
		if err := hub.Run(ctx); err != nil && ctx.Err() == nil {
			log.Error("event hub stopped", zap.Error(err))
		}
	}()
	server.MarkReady()
	log.Info("api listening", zap.String("address", a.json.url))
	if protocolServer != nil {
		protocolServer.MarkReady()
		for _, s := range []*servedHTTP{a.protocol, a.protocolTLS} {
			if s != nil {
				log.Info("bbs protocol listening", zap.String("address", s.url))
			}
		}
	}
	return a, nil
}

// ProtocolURL is where the BBS protocol answers ("" when it is not served).
func (a *API) ProtocolURL() string {
	if a.protocol == nil {
		return ""
	}
	return a.protocol.url
}

// ProtocolTLSURL is where the BBS protocol answers over mutual TLS beside ProtocolURL ("" when
// it does not).
func (a *API) ProtocolTLSURL() string {
	if a.protocolTLS == nil {
		return ""
	}
	return a.protocolTLS.url
}

// URL is where the API answers, e.g. http://127.0.0.1:8889.
func (a *API) URL() string { return a.json.url }

// Stop stops serving (waiting up to 10 s for requests in flight) and the event hub.
func (a *API) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The hub first: it closes its subscribers, so the event streams of both listeners end
	// and Shutdown need not wait for their clients to leave.
	a.cancel()
	a.hub.Wait()
	servers := []*servedHTTP{a.json}
	for _, s := range []*servedHTTP{a.protocol, a.protocolTLS} {
		if s != nil {
			servers = append(servers, s)
		}
	}
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.stop(ctx) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// servedHTTP is a handler served on a listener of its own.
type servedHTTP struct {
	srv  *http.Server
	url  string
	done chan error
}

// serveHTTP serves h on ln over HTTP/1.1: the BBS protocol's event streams need it, and the JSON
// API never offered HTTP/2 (its TLS configuration names no "h2"); the empty TLSNextProto says so.
func serveHTTP(ln net.Listener, scheme string, h http.Handler, log *zap.Logger) *servedHTTP {
	s := &servedHTTP{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			IdleTimeout:       2 * time.Minute,
			// An empty map turns HTTP/2 off on a TLS listener.
			TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		},
		url:  scheme + "://" + ln.Addr().String(),
		done: make(chan error, 1),
	}
	go func() {
		err := s.srv.Serve(ln)
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serving", zap.String("address", s.url), zap.Error(err))
		} else {
			err = nil
		}
		s.done <- err
	}()
	return s
}

func (s *servedHTTP) stop(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if serveErr := <-s.done; serveErr != nil {
		return serveErr
	}
	return err
}
