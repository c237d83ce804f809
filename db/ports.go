package db

import (
	"encoding/json"
	"fmt"

	"github.com/updatable-lrps/bbs/model"
)

// decodePorts reads the ports column. It holds what the store wrote with encoding/json,
// `[{"container_port":8080,"host_port":61001}]`, kept as written since migration 0013 made
// it json (jsonb's canonical layout, `[{"host_port": 61001, "container_port": 8080}]`, before):
// either is read by hand (a list of the fleet decodes 250,000 of them); anything else goes
// through encoding/json.
func decodePorts(b []byte) ([]model.PortMapping, error) {
	if len(b) == 0 || string(b) == "[]" {
		return nil, nil
	}
	if ports, ok := scanPorts(b); ok {
		return ports, nil
	}
	var ports []model.PortMapping
	if err := json.Unmarshal(b, &ports); err != nil {
		return nil, fmt.Errorf("decode ports %.100q: %w", b, err)
	}
	return ports, nil
}

// scanPorts parses a JSON array of objects whose only members are "container_port" and
// "host_port", each a non-negative integer below 2^32; ok is false for anything else.
func scanPorts(b []byte) (ports []model.PortMapping, ok bool) {
	p := portScanner{b: b}
	if !p.byte('[') {
		return nil, false
	}
	for {
		var m model.PortMapping
		var seenContainer, seenHost bool
		if !p.byte('{') {
			return nil, false
		}
		for {
			var field *uint32
			switch {
			case p.literal(`"container_port"`) && !seenContainer:
				field, seenContainer = &m.ContainerPort, true
			case p.literal(`"host_port"`) && !seenHost:
				field, seenHost = &m.HostPort, true
			default:
				return nil, false
			}
			if !p.byte(':') {
				return nil, false
			}
			v, ok := p.uint32()
			if !ok {
				return nil, false
			}
			*field = v
			if p.byte('}') {
				break
			}
			if !p.byte(',') {
				return nil, false
			}
		}
		ports = append(ports, m)
		if p.byte(']') {
			p.space()
			return ports, p.i == len(p.b)
		}
		if !p.byte(',') {
			return nil, false
		}
	}
}

type portScanner struct {
	b []byte
	i int
}

func (p *portScanner) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\n' || p.b[p.i] == '\t' || p.b[p.i] == '\r') {
		p.i++
	}
}

// byte skips space and then c, if c is next.
func (p *portScanner) byte(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// literal skips space and then s, if s is next.
func (p *portScanner) literal(s string) bool {
	p.space()
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// uint32 reads a JSON integer without sign, fraction or exponent that fits in 32 bits.
func (p *portScanner) uint32() (uint32, bool) {
	p.space()
	start := p.i
	var v uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		v = v*10 + uint64(p.b[p.i]-'0')
		if v > 1<<32-1 {
			return 0, false
		}
		p.i++
	}
	n := p.i - start
	if n == 0 || (n > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	return uint32(v), true
}
