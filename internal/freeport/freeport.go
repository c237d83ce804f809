// Package freeport picks loopback ports for the servers tests and benchmarks start as
// processes of their own.
//
// The ports are below Linux's ephemeral range (32768–60999): a port the kernel hands out for
// ":0" is also one it hands to outgoing connections, which can take it between the check and
// the server's bind (a benchmark with a thousand cells' connections open lost a run so).
// Ports are not handed out twice within a test binary.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

var used sync.Map

// Port is a port free now in 20000–31999.
func Port(t testing.TB) int {
	t.Helper()
	for range 1000 {
		p := 20000 + rand.IntN(12000)
		if _, taken := used.LoadOrStore(p, true); taken {
			continue
		}
		if free(p) {
			return p
		}
	}
	t.Fatal("no free port in 20000–31999")
	return 0
}

// Block is a base such that base+1 … base+n are free now, for a server that takes ports in a
// row.
func Block(t testing.TB, n int) int {
	t.Helper()
outer:
	for range 200 {
		base := 20000 + rand.IntN(12000-n)
		for p := base + 1; p <= base+n; p++ {
			if _, taken := used.Load(p); taken || !free(p) {
				continue outer
			}
		}
		for p := base + 1; p <= base+n; p++ {
			used.Store(p, true)
		}
		return base
	}
	t.Fatalf("no %d free ports in a row in 20000–31999", n)
	return 0
}

// Spread is a base such that, for each of count ranges stride ports apart, its first n ports
// (base+i·stride+1 … base+i·stride+n) are free now: for a server that takes a range per
// child from one base and uses the low end of each, as `bbs cluster`'s cells do with their
// instances' host ports. It tries every base in turn from a random one, since a test binary
// that has handed out many ports leaves few such spreads.
func Spread(t testing.TB, count, stride, n int) int {
	t.Helper()
	span := (count-1)*stride + n
	bases := 12000 - span
	first := rand.IntN(bases)
outer:
	for k := range bases {
		base := 20000 + (first+k)%bases
		for i := range count {
			for p := base + i*stride + 1; p <= base+i*stride+n; p++ {
				if _, taken := used.Load(p); taken {
					continue outer
				}
			}
		}
		for i := range count {
			for p := base + i*stride + 1; p <= base+i*stride+n; p++ {
				if !free(p) {
					continue outer
				}
			}
		}
		for i := range count {
			for p := base + i*stride + 1; p <= base+i*stride+n; p++ {
				used.Store(p, true)
			}
		}
		return base
	}
	t.Fatalf("no %d free ranges of %d ports, %d apart, in 20000–31999", count, n, stride)
	return 0
}

func free(p int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
