package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// --- the sampler ---

type slotKey struct {
	def   string
	index int32
}

// sampler lists the LRP's instances through the API continuously and records every sample in
// which fewer indices below the floor were served by a routable instance (RUNNING, ready, not
// retiring: what routers send traffic to) than should be:
// zero downtime. Indices excluded (around an injected crash, which is downtime whatever the
// definition) are not counted.
type sampler struct {
	c    *cluster
	guid string
	stop chan struct{}
	wg   sync.WaitGroup

	floor atomic.Int32

	mu         sync.Mutex
	excluded   map[int32]bool
	samples    int
	violations []string
	seen       map[slotKey]bool // every (definition, index) listed
	running    map[slotKey]bool // every (definition, index) seen RUNNING and ready
	notReady   map[slotKey]bool // every (definition, index) seen RUNNING but not ready
}

func (c *cluster) sample(guid string, n int32) *sampler {
	s := &sampler{c: c, guid: guid, stop: make(chan struct{}), excluded: map[int32]bool{},
		seen: map[slotKey]bool{}, running: map[slotKey]bool{}, notReady: map[slotKey]bool{}}
	s.floor.Store(n)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			if l, err := c.BBS.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: guid}); err == nil {
				s.record(l)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return s
}

func (s *sampler) record(l []model.ActualLRP) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	served := map[int32]bool{}
	for _, a := range l {
		k := slotKey{a.DefinitionID, a.Index}
		s.seen[k] = true
		if serves(&a) {
			s.running[k] = true
		}
		// What routers send traffic to: RUNNING, ready and not retiring.
		if a.Routable() {
			served[a.Index] = true
		}
		if a.State == model.StateRunning && a.NotReady {
			s.notReady[k] = true
		}
	}
	var missing []int32
	for i := range s.floor.Load() {
		if !s.excluded[i] && !served[i] {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 && len(s.violations) < 5 {
		s.violations = append(s.violations, fmt.Sprintf("sample %d: no routable instance (RUNNING, ready, not retiring) at %v: %s", s.samples, missing, describe(l)))
	}
}

func (s *sampler) setFloor(n int32) { s.floor.Store(n) }

func (s *sampler) exclude(i int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.excluded[i] = true
}

func (s *sampler) include(i int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.excluded, i)
}

func (s *sampler) everSeen(def string, i int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[slotKey{def, i}]
}

func (s *sampler) everRunning(def string, i int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[slotKey{def, i}]
}

func (s *sampler) everNotReady(def string, i int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notReady[slotKey{def, i}]
}

func (s *sampler) finish(t *testing.T) {
	t.Helper()
	close(s.stop)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.samples < 10 {
		t.Fatalf("only %d samples", s.samples)
	}
	if len(s.violations) > 0 {
		t.Fatalf("served indices dropped below %d:\n%s", s.floor.Load(), joinLines(s.violations))
	}
	t.Logf("every index served over %d samples", s.samples)
}

func joinLines(xs []string) string {
	var b bytes.Buffer
	for _, x := range xs {
		b.WriteString(x)
		b.WriteByte('\n')
	}
	return b.String()
}

// --- the event log ---

// eventLog keeps the event stream from the moment it was opened, to check orders that
// sampling could miss: the store commits events in order.
type eventLog struct {
	mu     sync.Mutex
	events []sseEvent
}

func (c *cluster) recordEvents() *eventLog {
	stream := subscribe(c.t, c.URL)
	l := &eventLog{}
	go func() {
		for e := range stream {
			l.mu.Lock()
			l.events = append(l.events, e)
			l.mu.Unlock()
		}
	}()
	return l
}

// change is what an event did to one instance's RUNNING state.
type change struct {
	def           string
	index         int32
	wasRun, isRun bool
}

func (l *eventLog) changes(guid string) []change {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []change
	for _, e := range l.events {
		var before, after *model.ActualLRP
		switch e.name {
		case model.EventActualLRPCreated:
			after = new(model.ActualLRP)
			if json.Unmarshal(e.data, after) != nil {
				continue
			}
		case model.EventActualLRPRemoved:
			before = new(model.ActualLRP)
			if json.Unmarshal(e.data, before) != nil {
				continue
			}
		case model.EventActualLRPChanged:
			var ch model.Change[model.ActualLRP]
			if json.Unmarshal(e.data, &ch) != nil {
				continue
			}
			before, after = &ch.Before, &ch.After
		default:
			continue
		}
		a := after
		if a == nil {
			a = before
		}
		if a.ProcessGUID != guid {
			continue
		}
		out = append(out, change{def: a.DefinitionID, index: a.Index, wasRun: serves(before), isRun: serves(after)})
	}
	return out
}

// serves reports whether the instance takes traffic at its index: RUNNING and ready (its
// readiness checks, if any, pass). A retiring one still counts: it serves until its cell
// stops it, which is what the handover checks order.
func serves(a *model.ActualLRP) bool {
	return a != nil && a.State == model.StateRunning && !a.NotReady
}

// firstStart is the position of the first change that made def's instance at i RUNNING and
// ready.
func firstStart(chs []change, def string, i int32) int {
	return slices.IndexFunc(chs, func(c change) bool { return c.def == def && c.index == i && !c.wasRun && c.isRun })
}

// firstStop is the position of the first change that took def's RUNNING instance at i out
// of RUNNING (stopped and removed, or crashed).
func firstStop(chs []change, def string, i int32) int {
	return slices.IndexFunc(chs, func(c change) bool { return c.def == def && c.index == i && c.wasRun && !c.isRun })
}

// checkHandover checks that at each index, `to` was RUNNING before `from` stopped there;
// it waits for the stream to deliver both. An index whose `to` instance never stopped in the
// log served throughout — a walk back took it back while it drained — when, as callers of a
// walk back make sure, it served when the log began.
func (l *eventLog) checkHandover(t *testing.T, guid, from, to string, indices ...int32) {
	t.Helper()
	var chs []change
	deadline := time.Now().Add(10 * time.Second)
	kept := func(i int32) bool { return firstStart(chs, to, i) < 0 && firstStop(chs, to, i) < 0 }
	for {
		chs = l.changes(guid)
		complete := true
		for _, i := range indices {
			if (firstStart(chs, to, i) < 0 && !kept(i)) || firstStop(chs, from, i) < 0 {
				complete = false
			}
		}
		if complete {
			break
		}
		if time.Now().After(deadline) {
			for _, i := range indices {
				if firstStart(chs, to, i) < 0 && !kept(i) {
					t.Errorf("index %d: no event shows %s RUNNING", i, to)
				}
				if firstStop(chs, from, i) < 0 {
					t.Errorf("index %d: no event shows %s stopping", i, from)
				}
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, i := range indices {
		if kept(i) {
			continue
		}
		if run, stop := firstStart(chs, to, i), firstStop(chs, from, i); run > stop {
			t.Errorf("index %d: %s stopped (event %d) before %s ran (event %d)", i, from, stop, to, run)
		}
	}
}

// checkOrder checks that def's instances first ran at the indices in the given order.
func (l *eventLog) checkOrder(t *testing.T, guid, def string, indices ...int32) {
	t.Helper()
	chs := l.changes(guid)
	last := -1
	for _, i := range indices {
		p := firstStart(chs, def, i)
		if p < last {
			t.Errorf("%s ran at index %d (event %d) before an index walked earlier (event %d); order wanted %v", def, i, p, last, indices)
		}
		last = p
	}
}

// waitStopped returns, once at least `least` of them are known, the indices at which def's
// RUNNING instance stopped, in ascending order.
func (l *eventLog) waitStopped(t *testing.T, guid, def string, least int, within time.Duration) []int32 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var out []int32
		for _, ch := range l.changes(guid) {
			if ch.def == def && ch.wasRun && !ch.isRun && !slices.Contains(out, ch.index) {
				out = append(out, ch.index)
			}
		}
		if len(out) >= least || time.Now().After(deadline) {
			slices.Sort(out)
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
}
