package protocol

import (
	"fmt"
	"net"
	"strings"

	"github.com/updatable-lrps/bbs/protocol/pb"
)

// The parts of a desired LRP that BBS validates with rules of their own: metric tags,
// actions, checks, cached dependencies, image layers and egress rules (desired_lrp_validate.go
// runs them in BBS's order).

// metricTagErrors is BBS's validateMetricTags: each tag a static value or a dynamic one it
// knows, not both; and, beside a metrics guid, a source_id tag that is it.
func metricTagErrors(tags map[string]*pb.MetricTagValue, metricsGUID string) fieldErrors {
	var e fieldErrors
	for _, v := range tags {
		if (v.GetStatic() != "") == dynamicValid(v.GetDynamic()) {
			e.field("static")
			e.field("dynamic")
		}
	}
	if len(tags) > 0 && metricsGUID != "" {
		if s, ok := tags["source_id"]; !ok || s.GetStatic() != metricsGUID {
			e.field("source_id should match metrics_guid")
		}
	}
	return e
}

func dynamicValid(v pb.MetricTagValue_DynamicValue) bool {
	return v == pb.MetricTagValue_INDEX || v == pb.MetricTagValue_INSTANCE_GUID
}

// actionErrors is Action.Validate: the errors of the first kind of action a holds (BBS reads
// that one alone), or inner-action when it holds none.
func actionErrors(a *pb.Action) fieldErrors {
	var e fieldErrors
	switch {
	case a.GetDownloadAction() != nil:
		d := a.GetDownloadAction()
		if d.GetFrom() == "" {
			e.field("from")
		}
		if d.GetTo() == "" {
			e.field("to")
		}
		if d.GetUser() == "" {
			e.field("user")
		}
		e.checksum(d.GetChecksumAlgorithm(), d.GetChecksumValue())
	case a.GetUploadAction() != nil:
		u := a.GetUploadAction()
		if u.GetTo() == "" {
			e.field("to")
		}
		if u.GetFrom() == "" {
			e.field("from")
		}
		if u.GetUser() == "" {
			e.field("user")
		}
	case a.GetRunAction() != nil:
		r := a.GetRunAction()
		if r.GetPath() == "" {
			e.field("path")
		}
		if r.GetUser() == "" {
			e.field("user")
		}
	case a.GetTimeoutAction() != nil:
		t := a.GetTimeoutAction()
		e.inner(t.GetAction())
		if t.GetTimeoutMs() <= 0 {
			e.field("timeout_ms")
		}
	case a.GetEmitProgressAction() != nil:
		e.inner(a.GetEmitProgressAction().GetAction())
	case a.GetTryAction() != nil:
		e.inner(a.GetTryAction().GetAction())
	case a.GetParallelAction() != nil:
		e.actions(a.GetParallelAction().GetActions())
	case a.GetSerialAction() != nil:
		e.actions(a.GetSerialAction().GetActions())
	case a.GetCodependentAction() != nil:
		e.actions(a.GetCodependentAction().GetActions())
	default:
		e.field("inner-action")
	}
	return e
}

// inner checks the action a timeout, try or emit-progress action wraps.
func (e *fieldErrors) inner(a *pb.Action) {
	if a == nil {
		e.field("action")
		return
	}
	e.add(actionErrors(a)...)
}

// actions checks the actions of a parallel, serial or codependent action.
func (e *fieldErrors) actions(as []*pb.Action) {
	if len(as) == 0 {
		e.field("actions")
		return
	}
	for i, a := range as {
		if a == nil {
			e.field(fmt.Sprintf("action at index %d", i))
			continue
		}
		e.add(actionErrors(a)...)
	}
}

// checksum is the rule BBS applies to download actions and cached dependencies.
func (e *fieldErrors) checksum(algorithm, value string) {
	if value != "" && algorithm == "" {
		e.field("checksum algorithm")
	}
	if value == "" && algorithm != "" {
		e.field("checksum value")
	}
	if value != "" && algorithm != "" {
		switch strings.ToLower(algorithm) {
		case "md5", "sha1", "sha256":
		default:
			e.field("invalid algorithm")
		}
	}
}

// check is Check.Validate: exactly one of its checks, on a port.
func (e *fieldErrors) check(c *pb.Check) {
	var port uint32
	switch {
	case c.GetHttpCheck() != nil && c.GetTcpCheck() != nil:
		e.field("check")
		return
	case c.GetHttpCheck() != nil:
		port = c.GetHttpCheck().GetPort()
	default:
		port = c.GetTcpCheck().GetPort()
	}
	if port == 0 || port > 65535 {
		e.field("port")
	}
}

func cachedDependencyErrors(c *pb.CachedDependency) fieldErrors {
	var e fieldErrors
	if c.GetFrom() == "" {
		e.field("from")
	}
	if c.GetTo() == "" {
		e.field("to")
	}
	e.checksum(c.GetChecksumAlgorithm(), c.GetChecksumValue())
	return e
}

func imageLayerErrors(l *pb.ImageLayer) fieldErrors {
	var e fieldErrors
	if l.GetUrl() == "" {
		e.field("url")
	}
	if l.GetDestinationPath() == "" {
		e.field("destination_path")
	}
	if t := l.GetLayerType(); t != pb.ImageLayer_SHARED && t != pb.ImageLayer_EXCLUSIVE {
		e.field("layer_type")
	}
	if m := l.GetMediaType(); m != pb.ImageLayer_TGZ && m != pb.ImageLayer_TAR && m != pb.ImageLayer_ZIP {
		e.field("media_type")
	}
	algorithm, exclusive := l.GetDigestAlgorithm(), l.GetLayerType() == pb.ImageLayer_EXCLUSIVE
	if (l.GetDigestValue() != "" || exclusive) && algorithm == pb.ImageLayer_DigestAlgorithmInvalid {
		e.field("digest_algorithm")
	}
	if (algorithm != pb.ImageLayer_DigestAlgorithmInvalid || exclusive) && l.GetDigestValue() == "" {
		e.field("digest_value")
	}
	if l.GetDigestValue() != "" && algorithm != pb.ImageLayer_SHA256 && algorithm != pb.ImageLayer_SHA512 {
		e.field("digest_algorithm")
	}
	return e
}

// egressRuleErrors is SecurityGroupRule.Validate. A repeated field or a message BBS tests for
// nil is absent on the wire exactly when it is empty here.
func egressRuleErrors(r *pb.SecurityGroupRule) fieldErrors {
	var e fieldErrors
	portsGiven, rangeGiven, icmpGiven := len(r.GetPorts()) > 0, r.GetPortRange() != nil, r.GetIcmpInfo() != nil
	switch r.GetProtocol() {
	case "tcp", "udp":
		switch {
		case !rangeGiven && !portsGiven:
			e.add("Missing required field: ports or port_range")
		case rangeGiven && portsGiven:
			e.add("Invalid: ports and port_range provided")
		default:
			if rangeGiven {
				pr := r.GetPortRange()
				if pr.GetStart() < 1 {
					e.field("port_range")
				}
				if pr.GetEnd() < 1 {
					e.field("port_range")
				}
				if pr.GetStart() > pr.GetEnd() {
					e.field("port_range")
				}
			}
			for _, p := range r.GetPorts() {
				if p < 1 {
					e.field("ports")
				}
			}
		}
		if icmpGiven {
			e.field("icmp_info")
		}
	case "icmp", "icmpv6":
		if rangeGiven {
			e.field("port_range")
		}
		if portsGiven {
			e.field("ports")
		}
		if !icmpGiven {
			if r.GetProtocol() == "icmp" {
				e.field("icmp_info")
			} else {
				e.field("icmpv6_info")
			}
		}
	case "all":
		if rangeGiven {
			e.field("port_range")
		}
		if portsGiven {
			e.field("ports")
		}
		if icmpGiven {
			e.field("icmp_info")
		}
	default:
		e.field("protocol")
	}
	if msg := destinationsError(r.GetDestinations()); msg != "" {
		e.field("destinations [ " + msg + " ]")
	}
	return e
}

// destinationsError checks each destination (comma-separated within an entry): an IP, a CIDR
// or a range "a-b" of IPs with a <= b, as BBS does.
func destinationsError(destinations []string) string {
	if len(destinations) == 0 {
		return "Must have at least 1 destination"
	}
	var errs []string
	for _, entry := range destinations {
		for _, d := range strings.Split(entry, ",") {
			n := strings.IndexAny(d, "-/")
			switch {
			case n == -1:
				if net.ParseIP(d) == nil {
					errs = append(errs, "Invalid IP")
				}
			case d[n] == '/':
				if _, _, err := net.ParseCIDR(d); err != nil {
					errs = append(errs, err.Error())
				}
			default:
				first, second := net.ParseIP(d[:n]), net.ParseIP(d[n+1:])
				if first == nil || second == nil {
					errs = append(errs, "Invalid IP")
					continue
				}
				// Byte by byte, as BBS compares them: a byte above its peer before any below
				// it is an error, once for each such byte.
				for i, b := range first {
					if b < second[i] {
						break
					}
					if b > second[i] {
						errs = append(errs, "Invalid IP")
					}
				}
			}
		}
	}
	return strings.Join(errs, ", ")
}
