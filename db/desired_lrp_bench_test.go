package db_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/updatable-lrps/bbs/internal/dbtest"
)

// BenchmarkDesireLRP desires b.N LRPs of 10 instances from 16 goroutines, as the API does
// under a burst of desires (a benchmark's 25,000, Cloud Controller's sync after a restore),
// and reports desires/s.
func BenchmarkDesireLRP(b *testing.B) {
	const writers = 16
	s := dbtest.NewStore(b)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if _, err := s.DesireLRP(ctx, newLRP(fmt.Sprintf("lrp-%d", i), 10)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "desires/s")
}
