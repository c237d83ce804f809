package sim

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/executor"
)

// NewIn is New for a cell with a work directory: its running LRP instances are recorded
// there (one file each), so that they outlive a killed cell agent as the process executor's
// instances do, and the next agent on the directory adopts them (executor.Adopter). A sim
// instance otherwise lives only in its agent's memory, and a killed sim cell would stand
// for a lost machine rather than a restarted process.
func NewIn(seed int64, dir string) *Backend { return &Backend{seed: seed, dir: dir} }

var _ executor.Adopter = (*Backend)(nil)

// record is what adopting a sim instance needs: its start, and when its action started.
type record struct {
	executor.Record
	Started time.Time `json:"started"`
}

// record writes the record of a started LRP instance (tasks are not adopted: their outcome
// would be lost with the agent that saw it).
func (b *Backend) record(spec executor.StartSpec, in *instance) {
	if b.dir == "" || spec.TaskGUID != "" {
		return
	}
	data, err := json.Marshal(record{Record: executor.RecordOf(spec), Started: in.started})
	if err != nil {
		return
	}
	file := filepath.Join(b.dir, spec.Guid+".json")
	if os.MkdirAll(b.dir, 0o755) != nil || os.WriteFile(file+".tmp", data, 0o644) != nil || os.Rename(file+".tmp", file) != nil {
		return // not adoptable: a restarted agent starts without it, as without a directory
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	select {
	case <-in.done: // it ended while its record was written
		os.Remove(file)
	default:
		in.record = file
	}
}

// Adopt implements executor.Adopter: every recorded instance runs on, its crash or exit
// still due when its script says, counted from its start.
func (b *Backend) Adopt(io.Writer) []executor.Adopted {
	if b.dir == "" {
		return nil
	}
	entries, _ := os.ReadDir(b.dir)
	var out []executor.Adopted
	for _, e := range entries {
		file := filepath.Join(b.dir, e.Name())
		if !strings.HasSuffix(e.Name(), ".json") {
			os.Remove(file) // a record half written when the agent died
			continue
		}
		data, err := os.ReadFile(file)
		var r record
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		sc, serr := parseScript(r.Env)
		if err != nil || serr != nil {
			os.Remove(file)
			continue
		}
		spec := r.Spec(nil)
		_, healthyDraw := b.draws(r.Guid)
		in := b.run(spec, sc, healthyDraw, r.Started)
		in.record = file
		out = append(out, executor.Adopted{Spec: spec, Instance: in})
	}
	return out
}
