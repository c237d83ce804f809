package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/internal/procs"
)

// stateDirName is the directory of the work directory that holds, beside the instance
// directories, what a restarted agent needs to adopt them: a record of each instance whose
// action has started (<guid>.json) and every instance's output (<guid>.out). It is kept out
// of the instance directories, which are the instances' own.
const stateDirName = ".state"

// adoptedPoll is how often an adopted instance's processes are looked for: they are not the
// agent's children, so no wait tells it when they exit.
const adoptedPoll = 100 * time.Millisecond

// errAdoptedExit is how an adopted instance ended: its processes are not the agent's
// children, so their exit status is lost to it.
var errAdoptedExit = errors.New("exited after its cell agent restarted (exit status unknown)")

func (b *Backend) stateDir() string               { return filepath.Join(b.workDir, stateDirName) }
func (b *Backend) outputFile(guid string) string  { return filepath.Join(b.stateDir(), guid+".out") }
func (b *Backend) recordFile(guid string) string  { return filepath.Join(b.stateDir(), guid+".json") }
func (b *Backend) instanceDir(guid string) string { return filepath.Join(b.workDir, guid) }
func (b *Backend) forget(guid string) error {
	return errors.Join(os.RemoveAll(b.instanceDir(guid)), rmIfExists(b.recordFile(guid)), rmIfExists(b.outputFile(guid)))
}

func rmIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// record writes the record of an LRP instance whose action has started (tasks are not
// adopted: a task's outcome is its exit status, which an agent that did not start it cannot
// learn). Written whole or not at all, so that a killed agent never leaves half of one.
func (b *Backend) record(in *instance) {
	s := in.spec
	if s.TaskGUID != "" {
		return
	}
	data, err := json.Marshal(executor.RecordOf(s))
	if err == nil {
		tmp := b.recordFile(s.Guid) + ".tmp"
		if err = os.WriteFile(tmp, data, 0o644); err == nil {
			err = os.Rename(tmp, b.recordFile(s.Guid))
		}
	}
	if err != nil {
		in.log.Warn("could not record the instance: a restarted cell agent will stop it rather than adopt it", zap.Error(err))
	}
}

// Adopt implements executor.Adopter: it takes over every LRP instance of the work directory
// whose action had started and still has a live process, and ends the rest — processes of
// instances still in setup, of tasks, of instances whose directory is gone — and removes what
// they left. An instance's processes are those whose environment names its guid
// (CF_INSTANCE_GUID, which every run action of it inherits) and whose HOME is in the work
// directory.
//
// An adopted instance runs until all its processes have exited (or its health check fails,
// or it is stopped); which one exits first no longer matters, and a serial action's steps
// still to come never start. A codependent action without a health check therefore goes on
// with the processes left when one of them exits.
func (b *Backend) Adopt(log io.Writer) []executor.Adopted {
	groups, err := b.liveGroups()
	if err != nil {
		b.log.Error("cannot look for the processes of an earlier cell agent", zap.Error(err))
		return nil
	}
	entries, _ := os.ReadDir(b.workDir)
	var out []executor.Adopted
	for _, e := range entries {
		guid := e.Name()
		if !e.IsDir() || guid == stateDirName {
			continue
		}
		in, err := b.adopt(guid, groups[guid], log)
		if err != nil {
			b.log.Info("ending an instance an earlier cell agent left", zap.String("guid", guid), zap.String("reason", err.Error()))
			b.discard(guid, groups[guid])
		} else {
			out = append(out, executor.Adopted{Spec: in.spec, Instance: in})
		}
		delete(groups, guid)
	}
	for guid, g := range groups {
		b.log.Info("ending the processes of an instance whose directory is gone", zap.String("guid", guid))
		b.discard(guid, g)
	}
	// Records and output of instances whose directory is gone.
	state, _ := os.ReadDir(b.stateDir())
	for _, e := range state {
		guid := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".tmp"), ".json"), ".out")
		if _, err := os.Stat(b.instanceDir(guid)); errors.Is(err, os.ErrNotExist) {
			os.Remove(filepath.Join(b.stateDir(), e.Name()))
		}
	}
	return out
}

// liveGroups finds the process groups of each instance guid with a live process here.
func (b *Backend) liveGroups() (map[string]map[int]struct{}, error) {
	ps, err := procs.Scan("CF_INSTANCE_GUID", "HOME")
	if err != nil {
		return nil, err
	}
	out := map[string]map[int]struct{}{}
	for _, p := range ps {
		guid, home := p.Env["CF_INSTANCE_GUID"], p.Env["HOME"]
		if guid == "" || filepath.Dir(home) != b.workDir {
			continue
		}
		if out[guid] == nil {
			out[guid] = map[int]struct{}{}
		}
		out[guid][p.PGID] = struct{}{}
	}
	return out, nil
}

// adopt rebuilds the instance guid from its record, with its live process groups.
func (b *Backend) adopt(guid string, groups map[int]struct{}, log io.Writer) (*instance, error) {
	data, err := os.ReadFile(b.recordFile(guid))
	if err != nil {
		return nil, fmt.Errorf("no record (still in setup, or a task): %w", err)
	}
	var r executor.Record
	if err := json.Unmarshal(data, &r); err != nil || r.Guid != guid {
		return nil, fmt.Errorf("unreadable record: %v", err)
	}
	if len(groups) == 0 {
		return nil, errors.New("no live process")
	}
	spec := r.Spec(log)
	out, err := followOutput(log, prefix(spec), b.outputFile(guid))
	if err != nil {
		return nil, err
	}
	dir := b.instanceDir(guid)
	in := &instance{
		backend: b, spec: spec, dir: dir, env: baseEnv(dir, spec.Env), out: out, groups: groups,
		log:         b.log.With(zap.String("guid", guid), zap.String("process_guid", r.Key.ProcessGUID), zap.Int32("index", r.Key.Index)),
		mainStarted: true, done: make(chan struct{}), stopped: make(chan struct{}),
	}
	go in.watchAdopted()
	return in, nil
}

// watchAdopted ends the adopted action once none of its process groups has a live member.
func (in *instance) watchAdopted() {
	for {
		in.mu.Lock()
		alive := false
		for g := range in.groups {
			if groupAlive(g) {
				alive = true
				break
			}
		}
		if !alive {
			in.err = errAdoptedExit
			in.mu.Unlock()
			close(in.done)
			return
		}
		in.mu.Unlock()
		time.Sleep(adoptedPoll)
	}
}

// discard kills an instance's process groups and removes what it left.
func (b *Backend) discard(guid string, groups map[int]struct{}) {
	for g := range groups {
		syscall.Kill(-g, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		alive := false
		for g := range groups {
			alive = alive || groupAlive(g)
		}
		if !alive {
			break
		}
	}
	if err := b.forget(guid); err != nil {
		b.log.Warn("could not remove what an instance left", zap.String("guid", guid), zap.Error(err))
	}
}
