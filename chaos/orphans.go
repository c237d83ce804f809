package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/internal/procs"
	"github.com/updatable-lrps/bbs/model"
)

// instanceProcess is a process of an instance (or a task) on one of the cluster's process
// cells, found by the CF_INSTANCE_GUID the executor gives it and the cell work directory its
// HOME is in.
type instanceProcess struct {
	PID        int
	Cell, Guid string
}

// instanceProcesses lists the live processes of the cluster's instances.
func (c *Cluster) instanceProcesses() ([]instanceProcess, error) {
	cells, err := filepath.Abs(filepath.Join(c.Dir, "cells"))
	if err != nil {
		return nil, err
	}
	ps, err := procs.Scan("CF_INSTANCE_GUID", "HOME")
	if err != nil {
		return nil, err
	}
	var out []instanceProcess
	for _, p := range ps {
		guid := p.Env["CF_INSTANCE_GUID"]
		rel, err := filepath.Rel(cells, p.Env["HOME"])
		if guid == "" || err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		cell, _, _ := strings.Cut(rel, string(filepath.Separator))
		out = append(out, instanceProcess{PID: p.PID, Cell: cell, Guid: guid})
	}
	return out, nil
}

// Orphans compares the instance processes on the machine with the BBS: an orphan is a
// process that no instance (RUNNING or CLAIMED) or task (RUNNING) on its cell accounts for;
// a lost instance is a RUNNING one on a process cell that has no process. Each names what
// it found.
func (c *Cluster) Orphans(ctx context.Context) (orphans, lost []string, err error) {
	var lrps []model.ActualLRP
	var tasks []model.Task
	err = retry(ctx, func(ctx context.Context) (err error) {
		if lrps, err = c.BBS.ActualLRPs(ctx, model.ActualLRPFilter{}); err != nil {
			return err
		}
		tasks, err = c.BBS.Tasks(ctx, model.TaskFilter{})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	procs, err := c.instanceProcesses()
	if err != nil {
		return nil, nil, err
	}
	accounted := map[string]bool{} // cell/guid
	running := map[string]string{} // cell/guid → what, for RUNNING instances
	for _, a := range lrps {
		if a.State == model.StateRunning || a.State == model.StateClaimed {
			accounted[a.CellID+"/"+a.InstanceGUID] = true
		}
		if a.State == model.StateRunning {
			running[a.CellID+"/"+a.InstanceGUID] = fmt.Sprintf("%s/%d (%s) on %s", a.ProcessGUID, a.Index, a.DefinitionID, a.CellID)
		}
	}
	for _, t := range tasks {
		if t.State == model.TaskRunning {
			accounted[t.CellID+"/"+t.TaskGUID] = true
		}
	}
	has := map[string]bool{}
	for _, p := range procs {
		key := p.Cell + "/" + p.Guid
		has[key] = true
		if !accounted[key] {
			orphans = append(orphans, fmt.Sprintf("pid %d (%s on %s)", p.PID, p.Guid, p.Cell))
		}
	}
	for key, what := range running {
		if !has[key] {
			lost = append(lost, what)
		}
	}
	sort.Strings(orphans)
	sort.Strings(lost)
	return orphans, lost, nil
}

// WaitNoOrphans repeats Orphans until it finds nothing or within has passed (instances being
// stopped take their drain and grace period to go), and returns the last findings.
func (c *Cluster) WaitNoOrphans(ctx context.Context, within time.Duration) (orphans, lost []string, err error) {
	err = until(ctx, within, 500*time.Millisecond, func(ctx context.Context) (string, error) {
		var err error
		orphans, lost, err = c.Orphans(ctx)
		return strings.Join(append(orphans, lost...), ", "), err
	})
	if len(orphans)+len(lost) > 0 {
		err = nil // they are the findings, not a failure to look
	}
	return orphans, lost, err
}

// CellOrphans asks every cell what it holds and lists the containers (not completed) that no
// instance (RUNNING or CLAIMED) or task (RUNNING) the BBS places on that cell accounts for:
// what Orphans finds by processes, for cells of any executor.
func (c *Cluster) CellOrphans(ctx context.Context) ([]string, error) {
	var cells []model.CellPresence
	var lrps []model.ActualLRP
	var tasks []model.Task
	err := retry(ctx, func(ctx context.Context) (err error) {
		if cells, err = c.BBS.Cells(ctx); err != nil {
			return err
		}
		if lrps, err = c.BBS.ActualLRPs(ctx, model.ActualLRPFilter{}); err != nil {
			return err
		}
		tasks, err = c.BBS.Tasks(ctx, model.TaskFilter{})
		return err
	})
	if err != nil {
		return nil, err
	}
	accounted := map[string]bool{}
	for _, a := range lrps {
		if a.State == model.StateRunning || a.State == model.StateClaimed {
			accounted[a.CellID+"/"+a.InstanceGUID] = true
		}
	}
	for _, t := range tasks {
		if t.State == model.TaskRunning {
			accounted[t.CellID+"/"+t.TaskGUID] = true
		}
	}
	client := cellapi.NewClient(c.TLS)
	var orphans []string
	for _, cell := range cells {
		var st *cellapi.State
		err := retry(ctx, func(ctx context.Context) (err error) {
			st, err = client.State(ctx, cell.RepAddress)
			return err
		})
		if err != nil {
			return orphans, fmt.Errorf("state of %s: %w", cell.CellID, err)
		}
		for _, ct := range st.Containers {
			if ct.State != "COMPLETED" && !accounted[cell.CellID+"/"+ct.InstanceGUID] {
				orphans = append(orphans, fmt.Sprintf("%s %s/%d (%s) on %s", ct.State, ct.Key.ProcessGUID, ct.Key.Index, ct.InstanceGUID, cell.CellID))
			}
		}
	}
	sort.Strings(orphans)
	return orphans, nil
}
