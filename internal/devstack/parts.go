package devstack

import (
	"context"
	"fmt"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/metrics"
	"github.com/updatable-lrps/bbs/worker"
)

// startAPI opens the store and the Temporal client the in-process parts share and starts
// the API: the JSON API, the BBS protocol, and the protocol over mutual TLS. One process,
// one registry: the API serves every part's series at /metrics.
func (s *stack) startAPI(ctx context.Context) error {
	store, err := boot.OpenStore(ctx, s.dbURL, s.log)
	if err != nil {
		return err
	}
	s.store = store
	s.onStop(func() { store.Close() })
	temporal, err := system.LazyTemporal(s.temporal, s.log)
	if err != nil {
		return err
	}
	s.onStop(func() { temporal.Close() })
	s.temporalClient, s.metrics = temporal, metrics.NewRegistry()
	protocolTLS, certs, err := listenProtocolTLS(s.cfg.ProtocolTLSAddr, s.dir)
	if err != nil {
		return fmt.Errorf("BBS protocol over TLS: %w", err)
	}
	a, err := boot.StartAPI(ctx, store, s.cfg.APIAddr, s.cfg.ProtocolAddr, nil, system.APIConfig{ProtocolTLSListener: protocolTLS,
		Cells: cellapi.NewClient(nil), Temporal: temporal, Rollouts: s.cfg.Rollouts, Metrics: s.metrics, Log: s.log})
	if err != nil {
		if protocolTLS != nil {
			protocolTLS.Close()
		}
		return err
	}
	s.api = a
	s.onStop(func() {
		s.log.Info("stopping the API")
		a.Stop()
	})
	s.banner.api = a.URL()
	s.banner.protocol = protocolLine(a.ProtocolURL())
	s.banner.protocolTLS = protocolTLSLine(a.ProtocolTLSURL(), certs)
	return nil
}

// startWorker starts the worker in-process, unless Config.NoWorker.
func (s *stack) startWorker(ctx context.Context) error {
	if s.cfg.NoWorker {
		s.banner.worker = "not started (--no-worker): run `bbs worker` yourself"
		return nil
	}
	s.banner.worker = fmt.Sprintf("task queue %q", worker.TaskQueue)
	// A store (a connection pool) of its own, as `bbs worker` has beside `bbs api`: sharing
	// the API's, a thousand rollouts' waits and steps queued the API's requests behind them
	// (9,255 waits for a connection in one benchmark run, 50 with two pools).
	store, err := boot.OpenStore(ctx, s.dbURL, s.log)
	if err != nil {
		return err
	}
	s.onStop(func() { store.Close() })
	w, err := system.StartWorker(ctx, system.WorkerConfig{Store: store, Temporal: s.temporalClient,
		ConvergenceInterval: s.cfg.ConvergenceInterval, Rollouts: s.cfg.Rollouts, Cells: cellapi.NewClient(nil), Metrics: s.metrics, Log: s.log})
	if err != nil {
		return err
	}
	s.onStop(func() {
		s.log.Info("stopping the worker")
		w.Stop()
	})
	return nil
}

// startRouter starts the router, which follows the API's routes.
func (s *stack) startRouter(ctx context.Context) error {
	rt, err := system.StartRouter(ctx, system.RouterConfig{Listen: s.cfg.RouterAddr, Admin: s.cfg.RouterAdminAddr,
		BBS: bbsclient.New(s.api.URL(), nil), Metrics: s.metrics, Log: s.log})
	if err != nil {
		return err
	}
	s.onStop(func() {
		s.log.Info("stopping the router")
		rt.Stop()
	})
	s.banner.router, s.banner.routerAdmin = s.cfg.RouterAddr, s.cfg.RouterAdminAddr
	return nil
}
