package clusterstack

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/updatable-lrps/bbs/internal/boot"
)

// startAPIs starts the API replicas, each ready once it listens.
func (c *cluster) startAPIs(ctx context.Context) error {
	for i := 1; i <= c.cfg.APIReplicas; i++ {
		name := fmt.Sprintf("api-%d", i)
		addr, paddr := c.apiAddrs(i)
		if err := c.bbs(ctx, name, []string{"api"}, c.apiEnv(i), addr, syscall.SIGTERM); err != nil {
			return err
		}
		c.apiLines = append(c.apiLines, fmt.Sprintf("%s https://%s (BBS protocol https://%s, log %s)", name, addr, paddr, c.rel(name+".log")))
	}
	return nil
}

// startLB starts the front of the replicas.
func (c *cluster) startLB(ctx context.Context) error {
	return c.bbs(ctx, "lb", []string{"lb"}, c.lbEnv(), c.cfg.Listen, syscall.SIGTERM)
}

// startWorkers starts the workers: placement's leader lock and the convergence schedule
// shared for real.
func (c *cluster) startWorkers(ctx context.Context) error {
	for i := 1; i <= c.cfg.Workers; i++ {
		name := fmt.Sprintf("worker-%d", i)
		if err := c.bbs(ctx, name, []string{"worker"}, c.workerEnv(i), "", syscall.SIGTERM); err != nil {
			return err
		}
		c.workerLines = append(c.workerLines, fmt.Sprintf("%s (log %s)", name, c.rel(name+".log")))
	}
	return nil
}

// startRouter starts the router.
func (c *cluster) startRouter(ctx context.Context) error {
	return c.bbs(ctx, "router", []string{"router"}, c.routerEnv(), c.cfg.RouterAddr, syscall.SIGTERM)
}

// startCells starts the cells and waits until every one has announced itself. SIGINT stops
// a cell at once (its instances stop, its presence is withdrawn), as Ctrl-C would; SIGTERM
// would drain it first.
func (c *cluster) startCells(ctx context.Context) error {
	var ids []string
	for i := 1; i <= c.cfg.Cells; i++ {
		id, zone := c.cellID(i)
		if err := os.MkdirAll(c.cellWorkDir(i), 0o755); err != nil {
			return err
		}
		if err := c.bbs(ctx, id, []string{"cell"}, c.cellEnv(i), "", syscall.SIGINT); err != nil {
			return err
		}
		ids = append(ids, id)
		c.cellLines = append(c.cellLines, fmt.Sprintf("%s in zone %s (%s executor, log %s)", id, zone, c.cfg.CellExecutor, c.rel(id+".log")))
	}
	if err := boot.WaitForCells(ctx, c.store, ids, 60*time.Second, nil); err != nil {
		return fmt.Errorf("%w; see %s", err, c.rel("cell-*.log"))
	}
	return nil
}
