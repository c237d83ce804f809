package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/model"
)

// Sampler reads every instance through the API at a steady pace and checks that no owed
// index of a watched LRP is without a RUNNING instance (see the package documentation for
// the definitions). The driver tells it what it desires, scales and removes, before it asks
// the BBS, so that an index it gives up is no longer owed by the time the BBS acts.
type Sampler struct {
	bbs   *bbsclient.Client
	every time.Duration
	stop  chan struct{}
	done  chan struct{}

	mu         sync.Mutex
	lrps       map[string]*watched
	samples    int
	unsampled  int
	violations int
	examples   []Violation
}

type watched struct {
	instances int32
	owed      map[int32]bool
}

// Violation is one owed index seen without a RUNNING instance.
type Violation struct {
	At          time.Time
	ProcessGUID string
	Index       int32
}

func (v Violation) String() string {
	return fmt.Sprintf("%s index %d had no RUNNING instance at %s", v.ProcessGUID, v.Index, v.At.Format("15:04:05.000"))
}

// maxExamples bounds the violations a sampler keeps for the report; it counts them all.
const maxExamples = 20

// StartSampler samples every interval until Stop.
func StartSampler(bbs *bbsclient.Client, every time.Duration) *Sampler {
	s := &Sampler{bbs: bbs, every: every, stop: make(chan struct{}), done: make(chan struct{}), lrps: map[string]*watched{}}
	go s.run()
	return s
}

// Watch starts checking an LRP with instances instances (or changes its count: a lower
// count gives up the indices above it at once, a higher one owes the new indices once they
// have run).
func (s *Sampler) Watch(guid string, instances int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.lrps[guid]
	if w == nil {
		w = &watched{owed: map[int32]bool{}}
		s.lrps[guid] = w
	}
	w.instances = instances
	for i := range w.owed {
		if i >= instances {
			delete(w.owed, i)
		}
	}
}

// Forget stops checking an LRP (before it is removed).
func (s *Sampler) Forget(guid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lrps, guid)
}

func (s *Sampler) run() {
	defer close(s.done)
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		all, err := s.bbs.ActualLRPs(ctx, model.ActualLRPFilter{})
		cancel()
		s.record(all, err, time.Now())
	}
}

func (s *Sampler) record(all []model.ActualLRP, err error, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.unsampled++
		return
	}
	s.samples++
	running := map[string]map[int32]bool{}
	for _, a := range all {
		if a.State != model.StateRunning || a.Retiring {
			continue
		}
		if running[a.ProcessGUID] == nil {
			running[a.ProcessGUID] = map[int32]bool{}
		}
		running[a.ProcessGUID][a.Index] = true
	}
	for guid, w := range s.lrps {
		for i := int32(0); i < w.instances; i++ {
			switch {
			case running[guid][i]:
				w.owed[i] = true
			case w.owed[i]:
				s.violations++
				if len(s.examples) < maxExamples {
					s.examples = append(s.examples, Violation{At: at, ProcessGUID: guid, Index: i})
				}
			}
		}
	}
}

// SamplerResult is what a sampler saw.
type SamplerResult struct {
	Samples, Unsampled, Violations int
	// Examples are the first violations.
	Examples []Violation
}

// Result is what the sampler has seen so far.
func (s *Sampler) Result() SamplerResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SamplerResult{Samples: s.samples, Unsampled: s.unsampled, Violations: s.violations,
		Examples: append([]Violation(nil), s.examples...)}
}

// Reset starts counting afresh (the LRPs watched stay watched).
func (s *Sampler) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples, s.unsampled, s.violations, s.examples = 0, 0, 0, nil
}

// Stop ends the sampling and returns what it saw.
func (s *Sampler) Stop() SamplerResult {
	close(s.stop)
	<-s.done
	return s.Result()
}
