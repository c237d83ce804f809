// Package api is the BBS HTTP surface of API.md: it validates requests at the edge, calls the
// store or the services it shares with the BBS protocol (package protocol), and maps every
// error to its type and status in one place.
package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/events"
	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/metrics"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/tasks"
	"github.com/updatable-lrps/bbs/ui"
	"go.uber.org/zap"
)

// Store is what the handlers read and write of the database directly, one interface per
// entity as cloudfoundry/bbs's db.DB composes DomainDB, ActualLRPDB, DesiredLRPDB, .... Each
// group of handlers holds only its own part; the changes that start rollouts, stop instances
// or follow a task's change go through the services in Deps, which declare what they need.
type Store interface {
	Pinger
	DomainStore
	DesiredLRPStore
	LRPDeploymentStore
	ActualLRPStore
	LifecycleStore
	EvacuationStore
	RolloutStore
	RolloutGroupStore
	CellStore
	RouterStore
}

// Deps are what a Server serves over. The services are built once per process and shared
// with the BBS protocol's server (internal/system), so that a change made through either API
// is made by the same service, by the same rules.
type Deps struct {
	// Store is the database (*db.Store).
	Store Store
	// LRPs changes LRPs (rolling updates, removals) and retires instances; required.
	LRPs *lrps.Service
	// Tasks serves the task routes; required.
	Tasks *tasks.Service
	// Events feeds the event streams; nil: they answer Unavailable. A ResumableFeed (the
	// hub) also resumes a stream after the event its Last-Event-ID names.
	Events events.Feed
	// Metrics, when set, is the process's registry: the server registers its series there
	// and serves all of it at /metrics (in `bbs dev` every part of the system runs in one
	// process, and the API is where its series are read). nil: a registry of the server's
	// own, so that several servers in one process (tests) do not collide.
	Metrics *prometheus.Registry
	Log     *zap.Logger
}

// Server serves the HTTP API.
type Server struct {
	pinger  Pinger
	log     *zap.Logger
	metrics *requestMetrics
	events  events.Feed
	ready   atomic.Bool
	router  chi.Router
}

// NewServer builds the API over d. The server answers Unavailable until MarkReady is called
// (after migrations).
func NewServer(d Deps) *Server {
	log := d.Log.Named("api")
	reg := d.Metrics
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	s := &Server{pinger: d.Store, log: log, metrics: newRequestMetrics(reg), events: d.Events}
	s.router = s.routes(routeHandlers{
		domains:     &domainHandlers{store: d.Store},
		desired:     &desiredLRPHandlers{store: d.Store, lrps: d.LRPs},
		deployments: &lrpDeploymentHandlers{store: d.Store, desired: d.Store, lrps: d.LRPs},
		actual:      &actualLRPHandlers{store: d.Store, lrps: d.LRPs},
		rollouts:    &rolloutHandlers{store: d.Store, lrps: d.LRPs},
		groups:      &rolloutGroupHandlers{store: d.Store, lrps: d.LRPs},
		cells:       &cellHandlers{store: d.Store},
		routers:     &routerHandlers{store: d.Store},
		lifecycle:   &lifecycleHandlers{store: d.Store, log: log},
		evacuation:  &evacuationHandlers{store: d.Store},
		tasks:       &taskHandlers{tasks: d.Tasks},
	})
	return s
}

// routeHandlers are the groups of handlers the routes mount, one per entity.
type routeHandlers struct {
	domains     *domainHandlers
	desired     *desiredLRPHandlers
	deployments *lrpDeploymentHandlers
	actual      *actualLRPHandlers
	rollouts    *rolloutHandlers
	groups      *rolloutGroupHandlers
	cells       *cellHandlers
	routers     *routerHandlers
	lifecycle   *lifecycleHandlers
	evacuation  *evacuationHandlers
	tasks       *taskHandlers
}

// MarkReady lets requests through once the database schema is in place.
func (s *Server) MarkReady() { s.ready.Store(true) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

func (s *Server) routes(h routeHandlers) chi.Router {
	r := chi.NewRouter()
	r.Use(middleware.RequestID, s.metrics.middleware, s.accessLog, s.recoverer)
	r.Get("/healthz", s.healthz)
	r.Handle("/metrics", s.metrics)
	r.Get("/ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently).ServeHTTP)
	r.Get("/ui/*", ui.Handler("/ui/").ServeHTTP)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, model.Errorf(model.ErrResourceNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, model.Errorf(model.ErrInvalidRequest, "method %s is not allowed on %s", r.Method, r.URL.Path))
	})

	r.Group(func(r chi.Router) {
		r.Use(s.requireReady)
		r.Post("/v1/ping", s.ping)
		r.Get("/v1/events/lrp_instances", s.streamEvents)

		r.Post("/v1/domains/upsert", handle(s, h.domains.upsertDomain))
		r.Post("/v1/domains/list", handle(s, h.domains.listDomains))

		r.Post("/v1/desired_lrp/desire", handle(s, h.desired.desireLRP))
		r.Post("/v1/desired_lrps/get_by_process_guid", handle(s, h.desired.desiredLRPByProcessGUID))
		r.Post("/v1/desired_lrps/list", handleList(s, "desired_lrps", h.desired.eachDesiredLRP))
		r.Post("/v1/desired_lrp_scheduling_infos/list", handleList(s, "desired_lrp_scheduling_infos", h.desired.eachSchedulingInfo))
		r.Post("/v1/desired_lrp/update", handle(s, h.desired.updateDesiredLRP))
		r.Post("/v1/desired_lrp/cancel_update", handle(s, h.desired.cancelUpdate))
		r.Post("/v1/desired_lrp/rollback", handle(s, h.desired.rollback))
		r.Post("/v1/desired_lrp/remove", handle(s, h.desired.removeDesiredLRP))

		r.Post("/v1/lrp_deployments/create", handle(s, h.deployments.createLRPDeployment))
		r.Post("/v1/lrp_deployments/update", handle(s, h.deployments.updateLRPDeployment))
		r.Post("/v1/lrp_deployments/activate", handle(s, h.deployments.activateLRPDeployment))
		r.Post("/v1/lrp_deployments/delete", handle(s, h.deployments.deleteLRPDeployment))
		r.Post("/v1/lrp_deployments/get_by_process_guid", handle(s, h.deployments.lrpDeploymentByProcessGUID))
		r.Post("/v1/lrp_deployments/list", handle(s, h.deployments.listLRPDeployments))

		r.Post("/v1/actual_lrps/list", handleList(s, "actual_lrps", h.actual.eachActualLRP))
		r.Post("/v1/actual_lrp_groups/list", handleList(s, "actual_lrp_groups", h.actual.eachActualLRPGroup))
		r.Post("/v1/actual_lrp_groups/list_by_process_guid", handle(s, h.actual.listActualLRPGroupsByProcessGUID))
		r.Post("/v1/actual_lrp_groups/get_by_process_guid_and_index", handle(s, h.actual.actualLRPGroupByProcessGUIDAndIndex))
		r.Post("/v1/actual_lrps/retire", handle(s, h.actual.retireActualLRP))

		r.Post("/v1/rollouts/list", handle(s, h.rollouts.listRollouts))
		r.Post("/v1/rollouts/get", handle(s, h.rollouts.getRollout))
		r.Post("/v1/rollouts/pause", handle(s, h.rollouts.pause))
		r.Post("/v1/rollouts/resume", handle(s, h.rollouts.resume))
		r.Post("/v1/rollouts/abort", handle(s, h.rollouts.abort))
		r.Post("/v1/rollouts/set_pace", handle(s, h.rollouts.setPace))
		r.Post("/v1/rollouts/promote", handle(s, h.rollouts.promote))

		r.Post("/v1/rollout_groups/create", handle(s, h.groups.create))
		r.Post("/v1/rollout_groups/get", handle(s, h.groups.get))
		r.Post("/v1/rollout_groups/list", handle(s, h.groups.list))
		r.Post("/v1/rollout_groups/pause", handle(s, h.groups.control(model.GroupControlPause)))
		r.Post("/v1/rollout_groups/resume", handle(s, h.groups.control(model.GroupControlResume)))
		r.Post("/v1/rollout_groups/abort", handle(s, h.groups.control(model.GroupControlAbort)))

		r.Post("/v1/cells/list", handle(s, h.cells.listCells))
		r.Post("/v1/cells/heartbeat", handle(s, h.cells.cellHeartbeat))
		r.Post("/v1/cells/remove", handle(s, h.cells.removeCell))
		r.Post("/v1/routers/report", handle(s, h.routers.report))
		r.Post("/v1/routers/telemetry", handle(s, h.routers.telemetry))

		r.Post("/v1/actual_lrps/claim", handle(s, h.lifecycle.claimActualLRP))
		r.Post("/v1/actual_lrps/start", handle(s, h.lifecycle.startActualLRP))
		r.Post("/v1/actual_lrps/claim_batch", handle(s, h.lifecycle.claimActualLRPs))
		r.Post("/v1/actual_lrps/start_batch", handle(s, h.lifecycle.startActualLRPs))
		r.Post("/v1/actual_lrps/crash", handle(s, h.lifecycle.crashActualLRP))
		r.Post("/v1/actual_lrps/fail", handle(s, h.lifecycle.failActualLRP))
		r.Post("/v1/actual_lrps/remove", handle(s, h.lifecycle.removeActualLRP))
		r.Post("/v1/actual_lrps/claim_stop", handle(s, h.lifecycle.claimStop))
		r.Post("/v1/actual_lrps/unclaim", handle(s, h.lifecycle.unclaimActualLRP))
		r.Post("/v1/actual_lrps/evacuate_running", handle(s, h.evacuation.evacuateRunningActualLRP))
		r.Post("/v1/actual_lrps/remove_evacuating", handle(s, h.evacuation.removeEvacuatingActualLRP))

		r.Get("/v1/events/tasks", s.streamTaskEvents)
		r.Post("/v1/tasks/desire", handle(s, h.tasks.desireTask))
		r.Post("/v1/tasks/list", handle(s, h.tasks.listTasks))
		r.Post("/v1/tasks/get_by_task_guid", handle(s, h.tasks.taskByGUID))
		r.Post("/v1/tasks/cancel", handle(s, h.tasks.cancelTask))
		r.Post("/v1/tasks/resolving", handle(s, h.tasks.resolvingTask))
		r.Post("/v1/tasks/delete", handle(s, h.tasks.deleteTask))
		r.Post("/v1/tasks/start", handle(s, h.tasks.startTask))
		r.Post("/v1/tasks/complete", handle(s, h.tasks.completeTask))
		r.Post("/v1/tasks/reject", handle(s, h.tasks.rejectTask))
	})
	return r
}

// validator is a request that checks itself after decoding.
type validator interface{ Validate() error }

// decodeAndValidate turns a request body into a validated Req: the whole edge of the API.
func decodeAndValidate[Req any](body []byte) (*Req, error) {
	req := new(Req)
	if err := decodeRequest(body, req); err != nil {
		return nil, err
	}
	if v, ok := any(req).(validator); ok {
		if err := v.Validate(); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// handle adapts a typed handler: it reads, decodes and validates the body, calls fn, and
// writes the response or the error.
func handle[Req, Resp any](s *Server, fn func(ctx context.Context, req *Req) (Resp, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, ok := readRequest[Req](s, w, r)
		if !ok {
			return
		}
		resp, err := fn(r.Context(), req)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, resp)
	}
}

// readRequest reads, decodes and validates a route's request; on failure it has answered
// with the error.
func readRequest[Req any](s *Server, w http.ResponseWriter, r *http.Request) (*Req, bool) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	req, err := decodeAndValidate[Req](body)
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	return req, true
}

// listWriteTimeout is how long a streamed list waits for its client to take the next 1,024
// items before it gives up on it.
const listWriteTimeout = 30 * time.Second

// jsonAppender is an item that writes its own JSON, the bytes encoding/json would write,
// without reflection (model.ActualLRP: a list of the fleet holds 250,000 of them).
type jsonAppender interface{ AppendJSON(b []byte) []byte }

// handleList serves a list route as a stream: each item is encoded as the store yields it,
// so that a list of the whole fleet costs the API one item's memory, not the list's. An
// error before the first item is an ordinary error response; one after it (the database
// went away mid-list, the client hung up) aborts the response, so that no client takes a
// cut list for a whole one.
func handleList[Req, Item any](s *Server, field string, each func(ctx context.Context, req *Req, yield func(*Item) error) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, ok := readRequest[Req](s, w, r)
		if !ok {
			return
		}
		// The rows stay open while the client reads: one that stops reading must not hold a
		// database connection (and an old snapshot) for ever.
		rc := http.NewResponseController(w)
		rc.SetWriteDeadline(time.Now().Add(listWriteTimeout))
		defer rc.SetWriteDeadline(time.Time{})
		bw := bufio.NewWriterSize(w, 64<<10)
		enc := json.NewEncoder(bw)
		var buf []byte
		n := 0
		begin := func() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			bw.WriteString(`{"` + field + `":[`)
		}
		err := each(r.Context(), req, func(item *Item) error {
			if n == 0 {
				begin()
			} else {
				bw.WriteByte(',')
			}
			n++
			if n%1024 == 0 {
				rc.SetWriteDeadline(time.Now().Add(listWriteTimeout))
			}
			if a, ok := any(item).(jsonAppender); ok {
				buf = a.AppendJSON(buf[:0])
				_, err := bw.Write(buf)
				return err
			}
			return enc.Encode(item)
		})
		if err != nil {
			if n == 0 {
				s.writeError(w, r, err)
				return
			}
			s.log.Warn("list cut short", zap.String("path", r.URL.Path), zap.Int("items", n), zap.Error(err))
			panic(http.ErrAbortHandler)
		}
		if n == 0 {
			begin()
		}
		bw.WriteString("]}\n")
		bw.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) requireReady(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			s.writeError(w, r, model.Errorf(model.ErrUnavailable, "the database schema is being migrated, retry shortly"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// recoverer turns a panic into an UnknownError response, so that a bug in one request neither
// kills the server nor leaves the client hanging.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("panic", zap.Any("panic", p), zap.Stack("stack"))
				s.writeError(w, r, errPanic)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

var errPanic = errors.New("handler panicked")

func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		aborted := true
		defer func() {
			s.log.Debug("request", zap.String("method", r.Method), zap.String("path", r.URL.Path),
				zap.String("status", statusLabel(ww.Status(), aborted)), zap.Duration("took", time.Since(start)),
				zap.String("request_id", middleware.GetReqID(r.Context())))
		}()
		next.ServeHTTP(ww, r)
		aborted = false
	})
}
