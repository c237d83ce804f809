package executor

import (
	"net"
	"strconv"
)

// allocPorts hands out n host ports; the caller holds e.mu. It walks the range round-robin
// from where the last allocation ended, so a port just freed is not reused at once (a client
// of the old instance might still be connecting to it).
func (e *Executor) allocPorts(n int) ([]uint32, error) {
	if n == 0 {
		return nil, nil
	}
	size := int(e.cfg.PortRangeEnd-e.cfg.PortRangeStart) + 1
	got := make([]uint32, 0, n)
	for tried := 0; len(got) < n && tried < size; tried++ {
		p := e.nextPort
		e.nextPort++
		if e.nextPort > e.cfg.PortRangeEnd || e.nextPort < e.cfg.PortRangeStart {
			e.nextPort = e.cfg.PortRangeStart
		}
		if e.usedPorts[p] {
			continue
		}
		if !e.cfg.SkipPortProbe && !e.portFree(p) {
			continue
		}
		e.usedPorts[p] = true
		got = append(got, p)
	}
	if len(got) < n {
		for _, p := range got {
			delete(e.usedPorts, p)
		}
		return nil, ErrNoFreePorts
	}
	return got, nil
}

// portFree reports whether something else on the host already listens on p: the range is
// shared with whatever else runs there, so our own bookkeeping is not enough.
func (e *Executor) portFree(p uint32) bool {
	addrs := []string{"127.0.0.1"}
	if e.cfg.Address != "127.0.0.1" {
		addrs = append(addrs, e.cfg.Address)
	}
	for _, a := range addrs {
		l, err := net.Listen("tcp", net.JoinHostPort(a, strconv.FormatUint(uint64(p), 10)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}
