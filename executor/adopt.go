package executor

import (
	"context"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/updatable-lrps/bbs/model"
)

// Adopter is a Backend whose instances can outlive the cell agent that started them: local
// processes keep running when the agent is killed (SIGKILL, the OOM killer, a crash). A cell
// agent restarted on the same work directory finds them through Adopt and takes them over
// where its predecessor left them, as garden's containers outlive a Diego rep: without it
// they would run on unknown to anyone (orphans holding their ports), while the BBS, seeing a
// cell that does not have its instances, would start every one of them again.
type Adopter interface {
	// Adopt returns the instances still running from an earlier agent, each with its
	// output going to log, and ends (leaving nothing behind) those it cannot take over.
	Adopt(log io.Writer) []Adopted
}

// Adopted is an instance an earlier agent started that still runs.
type Adopted struct {
	// Spec is what it was started with (the log aside).
	Spec     StartSpec
	Instance Instance
}

// adopt gives each instance the backend hands over a container of its own, under the guid,
// key and ports it had, which then goes on as if this executor had started it: CREATED, and
// RUNNING once its health check passes. The BBS still has it RUNNING (or CLAIMED) with this
// cell's instance key, so the cell's reconciliation leaves it be.
func (e *Executor) adopt(a Adopter) {
	for _, ad := range a.Adopt(e.cfg.Log) {
		s := ad.Spec
		c := &container{
			Container: Container{Guid: s.Guid, Key: s.Key, State: StateInitializing, MemoryMB: s.Definition.MemoryMB,
				DiskMB: s.Definition.DiskMB, Address: s.Address, Ports: s.Ports, Since: time.Now()},
			spec:   RunSpec{Guid: s.Guid, Key: s.Key, Definition: s.Definition},
			hasRun: true,
			stop:   make(chan struct{}),
			done:   make(chan struct{}),
		}
		ctx, cancel := context.WithCancel(context.Background())
		c.cancel = cancel
		e.mu.Lock()
		e.containers[s.Guid] = c
		for _, p := range s.Ports {
			e.usedPorts[p.HostPort] = true
		}
		e.mu.Unlock()
		e.log.Info("adopted an instance an earlier cell agent started", zap.String("guid", s.Guid),
			zap.String("process_guid", s.Key.ProcessGUID), zap.Int32("index", s.Key.Index))
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			defer close(c.done)
			e.supervise(ctx, c, ad.Instance)
		}()
	}
}

// Record is what a backend keeps of an instance it started, so that an agent restarted after
// its own death can adopt it (Adopter): the StartSpec without the log.
type Record struct {
	Guid       string                      `json:"guid"`
	Key        model.ActualLRPKey          `json:"key"`
	Definition model.LRPDefinition         `json:"definition"`
	Address    string                      `json:"address"`
	Ports      []model.PortMapping         `json:"ports,omitempty"`
	Env        []model.EnvironmentVariable `json:"env,omitempty"`
}

// RecordOf is the record of an instance started from s.
func RecordOf(s StartSpec) Record {
	return Record{Guid: s.Guid, Key: s.Key, Definition: s.Definition, Address: s.Address, Ports: s.Ports, Env: s.Env}
}

// Spec is the StartSpec the record was made from, its output going to log.
func (r Record) Spec(log io.Writer) StartSpec {
	return StartSpec{Guid: r.Guid, Key: r.Key, Definition: r.Definition, Address: r.Address, Ports: r.Ports, Env: r.Env, Log: log}
}
