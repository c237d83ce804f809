package sshd

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/ssh"
)

// Ports are an instance's ports: the address they listen on and each container port's host
// port (the same number when the instance runs in a container of its own).
type Ports struct {
	Address string
	// Mapped maps a container port to the host port that reaches it.
	Mapped map[uint32]uint32
}

// ParseInstancePorts reads CF_INSTANCE_PORTS ([{"external":61001,"internal":8080}, ...]),
// as the cell sets it for each instance.
func ParseInstancePorts(address, cfInstancePorts string) (Ports, error) {
	p := Ports{Address: address, Mapped: map[uint32]uint32{}}
	if cfInstancePorts == "" {
		return p, nil
	}
	var list []struct {
		External uint32 `json:"external"`
		Internal uint32 `json:"internal"`
	}
	if err := json.Unmarshal([]byte(cfInstancePorts), &list); err != nil {
		return p, fmt.Errorf("CF_INSTANCE_PORTS: %w", err)
	}
	for _, m := range list {
		if m.Internal == 0 || m.External == 0 || m.Internal > 65535 || m.External > 65535 {
			return p, fmt.Errorf("CF_INSTANCE_PORTS: port out of range in %+v", m)
		}
		p.Mapped[m.Internal] = m.External
	}
	return p, nil
}

// HostPort is where container port cp is reached: its mapped host port, or cp itself when
// the instance has no mapping for it (no cell, or a container of its own).
func (p Ports) HostPort(cp uint32) uint32 {
	if hp, ok := p.Mapped[cp]; ok {
		return hp
	}
	return cp
}

// target is where a direct-tcpip request for host:port goes: only the instance's own ports,
// named by container port (as inside a container) or by host port, on a local name.
func (p Ports) target(host string, port uint32) (string, error) {
	local := host == "localhost" || host == p.Address || host == "0.0.0.0" || host == "::"
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		local = true
	}
	if !local {
		return "", fmt.Errorf("only this instance's own ports can be forwarded, not %s", net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	if hp, ok := p.Mapped[port]; ok {
		return net.JoinHostPort(p.Address, strconv.Itoa(int(hp))), nil
	}
	for _, hp := range p.Mapped {
		if hp == port {
			return net.JoinHostPort(p.Address, strconv.Itoa(int(hp))), nil
		}
	}
	return "", fmt.Errorf("port %d is not one of this instance's ports %v", port, p.containerPorts())
}

func (p Ports) containerPorts() []uint32 {
	out := make([]uint32, 0, len(p.Mapped))
	for cp := range p.Mapped {
		out = append(out, cp)
	}
	slices.Sort(out)
	return out
}

// directTCPIP is the payload of a direct-tcpip channel open (RFC 4254 7.2).
type directTCPIP struct {
	Host       string
	Port       uint32
	OriginHost string
	OriginPort uint32
}

// forward serves a direct-tcpip channel: a connection to one of the instance's ports.
func (s *Server) forward(nch ssh.NewChannel, log *zap.Logger) {
	var req directTCPIP
	if err := ssh.Unmarshal(nch.ExtraData(), &req); err != nil {
		nch.Reject(ssh.ConnectionFailed, "bbs sshd: malformed direct-tcpip request")
		return
	}
	addr, err := s.cfg.Ports.target(req.Host, req.Port)
	if err != nil {
		nch.Reject(ssh.Prohibited, "bbs sshd: "+err.Error())
		return
	}
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		nch.Reject(ssh.ConnectionFailed, "bbs sshd: "+err.Error())
		return
	}
	defer conn.Close()
	ch, reqs, err := nch.Accept()
	if err != nil {
		return
	}
	defer ch.Close()
	go ssh.DiscardRequests(reqs)
	log.Debug("forwarding", zap.String("to", addr))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		io.Copy(conn, ch)
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	go func() {
		defer wg.Done()
		io.Copy(ch, conn)
		ch.CloseWrite()
	}()
	wg.Wait()
}
