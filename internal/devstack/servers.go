package devstack

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/pgcluster"
	"github.com/updatable-lrps/bbs/internal/supervise"
	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"go.uber.org/zap"
)

// startPostgres starts the private PostgreSQL under the data directory, supervised, with
// the database bbs — unless Config.DatabaseURL names one.
func (s *stack) startPostgres(ctx context.Context) error {
	s.banner.postgresNote = "(from DATABASE_URL)"
	s.banner.supervision = "the Temporal dev server is restarted if it dies (the log says so)"
	if s.dbURL != "" {
		s.banner.postgres = boot.RedactURL(s.dbURL)
		return nil
	}
	s.log.Info("starting PostgreSQL", zap.String("data", filepath.Join(s.dir, "postgres")))
	pgCfg := pgcluster.Config{
		DataDir: filepath.Join(s.dir, "postgres"),
		Port:    s.cfg.PGPort,
		LogFile: filepath.Join(s.dir, "postgres.log"),
	}
	// A restart uses the same data directory (pgcluster clears the postmaster.pid a
	// killed server leaves) and port, so the store's pool simply reconnects.
	startPG := func(ctx context.Context) (supervise.Child, error) {
		pg, err := pgcluster.Start(ctx, pgCfg)
		if err != nil {
			return nil, err
		}
		s.log.Info("PostgreSQL is up", zap.Int("pid", pg.PID()), zap.Int("port", pg.Port()))
		return pg, nil
	}
	first, err := startPG(ctx)
	if err != nil {
		return err
	}
	pg := first.(*pgcluster.Cluster)
	s.pgSup = supervise.Watch("PostgreSQL", pg, startPG, supervise.DefaultPolicy, s.log)
	s.onStop(func() {
		s.log.Info("stopping PostgreSQL")
		if err := s.pgSup.Stop(); err != nil {
			s.log.Error("stopping PostgreSQL", zap.Error(err))
		}
	})
	if err := pg.CreateDatabase(ctx, "bbs"); err != nil {
		return err
	}
	s.dbURL = pg.URL("bbs")
	s.banner.postgres = boot.RedactURL(s.dbURL)
	s.banner.postgresNote = fmt.Sprintf("(data in %s, log %s)", s.shown("postgres"), s.shown("postgres.log"))
	s.banner.supervision = "PostgreSQL and the Temporal dev server are restarted if they die (the log says so)"
	return nil
}

// startTemporal starts the Temporal dev server on the SQLite file under the data
// directory, supervised.
func (s *stack) startTemporal(ctx context.Context) error {
	s.log.Info("starting the Temporal dev server")
	tCfg := temporaldev.Config{
		Bin:     s.cfg.TemporalBin,
		DBFile:  filepath.Join(s.dir, "temporal.db"),
		Port:    s.cfg.TemporalPort,
		UIPort:  s.cfg.TemporalUIPort,
		LogFile: filepath.Join(s.dir, "temporal.log"),
	}
	// A restart uses the same SQLite file, so workflows, schedules and the namespace are
	// still there; the API's and the worker's client (lazy, gRPC) reconnects by itself.
	startTemporal := func(ctx context.Context) (supervise.Child, error) {
		ts, err := temporaldev.Start(ctx, tCfg)
		if err != nil {
			return nil, err
		}
		s.log.Info("Temporal dev server is up", zap.Int("pid", ts.PID()), zap.String("address", ts.Address()))
		return ts, nil
	}
	first, err := startTemporal(ctx)
	if err != nil {
		return err
	}
	ts := first.(*temporaldev.Server)
	s.temporalSup = supervise.Watch("Temporal dev server", ts, startTemporal, supervise.DefaultPolicy, s.log)
	s.onStop(func() {
		s.log.Info("stopping the Temporal dev server")
		s.temporalSup.Stop()
	})
	s.temporal.Address, s.temporal.Namespace = ts.Address(), ts.Namespace()
	s.banner.temporalUIPort = s.cfg.TemporalUIPort
	s.banner.temporal = ts.Address()
	s.banner.temporalDB, s.banner.temporalLog = s.shown("temporal.db"), s.shown("temporal.log")
	return nil
}
