package freeport

import (
	"fmt"
	"net"
	"testing"
)

// Spread's ranges are free, and Port never hands out one of their ports afterwards.
func TestSpread(t *testing.T) {
	base := Spread(t, 3, 1000, 20)
	for i := range 3 {
		for p := base + i*1000 + 1; p <= base+i*1000+20; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				t.Fatalf("port %d of range %d: %v", p, i, err)
			}
			l.Close()
			if _, taken := used.Load(p); !taken {
				t.Fatalf("port %d of range %d is not marked used", p, i)
			}
		}
	}
}

// Spread finds a spread among ports mostly handed out already, as in a test binary that has
// run many servers.
func TestSpreadAmongUsedPorts(t *testing.T) {
	for p := 20000; p < 32000; p++ {
		if p%40 != 0 {
			continue
		}
		used.LoadOrStore(p, true)
	}
	base := Spread(t, 3, 1000, 30)
	for i := range 3 {
		for p := base + i*1000 + 1; p <= base+i*1000+30; p++ {
			if p%40 == 0 {
				t.Fatalf("range %d includes port %d, handed out before", i, p)
			}
		}
	}
}
