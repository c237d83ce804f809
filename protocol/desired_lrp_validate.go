package protocol

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
)

// BBS's validation of desired LRPs and their updates, rule for rule and in its order, so that
// a request BBS refuses is refused here with the very message BBS gives (clients and
// operators read them; the compat tests compare them with what BBS's own models say). Our
// model's rules (package model) run after these, on what passed: they are stricter in places
// (instance and CPU-weight limits, one kind per action, valid JSON in routes) and speak our
// wording, since BBS has no message for what it accepts.

// Limits of BBS's validation.
const (
	maxVolumeMountedFilesBytes = 1024 * 1024
	maxAnnotationBytes         = 10 * 1024
	maxRoutesBytes             = 128 * 1024
)

var bbsProcessGUID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// fieldErrors are BBS's validation errors, each an entry of its ValidationError.
type fieldErrors []string

// field adds BBS's ErrInvalidField.
func (e *fieldErrors) field(name string) { *e = append(*e, "Invalid field: "+name) }

func (e *fieldErrors) add(msgs ...string) { *e = append(*e, msgs...) }

// err is the InvalidRequest BBS answers, the entries joined as its ValidationError joins
// them; nil when there are none.
func (e fieldErrors) err() error {
	if len(e) == 0 {
		return nil
	}
	return model.Errorf(model.ErrInvalidRequest, "%s", strings.Join(e, ", "))
}

// validateDesiredLRP is DesiredLRP.Validate.
func validateDesiredLRP(d *pb.DesiredLRP) error {
	var e fieldErrors
	e.desiredLRP(d, true)
	return e.err()
}

// validateDefinition is the part of DesiredLRP.Validate that concerns a definition (ours:
// the definitions of an update, a deployment and a rollback are held to the same rules as a
// desired LRP's).
func validateDefinition(def *pb.LRPDefinition) error {
	var e fieldErrors
	e.desiredLRP(desiredView(def), false)
	return e.err()
}

// desiredLRP checks d as BBS does; withLRP adds the rules on the LRP's own fields (identity,
// scale, routes, annotation, metric tags), left out for a bare definition.
func (e *fieldErrors) desiredLRP(d *pb.DesiredLRP, withLRP bool) {
	if volumeMountedFilesTooLarge(d.GetVolumeMountedFiles()) {
		e.field("volumeMountedFiles")
	}
	if withLRP && d.GetDomain() == "" {
		e.field("domain")
	}
	if d.GetRootFs() == "" {
		e.field("rootfs")
	}
	if u, err := url.Parse(d.GetRootFs()); err != nil || u.Scheme == "" {
		e.field("rootfs")
	}
	if withLRP && d.GetInstances() < 0 {
		e.field("instances")
	}
	if d.GetMemoryMb() < 0 {
		e.field("memory_mb")
	}
	if d.GetDiskMb() < 0 {
		e.field("disk_mb")
	}
	if l := d.GetLogRateLimit(); l != nil && l.GetBytesPerSecond() < -1 {
		e.field("log_rate_limit_bytes_per_second")
	}
	if withLRP {
		if len(d.GetAnnotation()) > maxAnnotationBytes {
			e.field("annotation")
		}
	}
	if d.GetMaxPids() < 0 {
		e.field("max_pids")
	}
	if withLRP {
		if routesTooLarge(d.GetRoutes()) {
			e.field("routes")
		}
		// On the wire an empty map is an absent one, which BBS's decoder leaves nil.
		if len(d.GetMetricTags()) == 0 {
			e.field("metric_tags")
		} else if tagErrs := metricTagErrors(d.GetMetricTags(), d.GetMetricsGuid()); len(tagErrs) > 0 {
			e.field("metric_tags")
			e.add(tagErrs...)
		}
	}
	e.runInfo(d, withLRP)
}

// runInfo is DesiredLRPRunInfo.Validate, which BBS runs on the run part of a desired LRP.
func (e *fieldErrors) runInfo(d *pb.DesiredLRP, withKey bool) {
	if withKey {
		if d.GetDomain() == "" {
			e.field("domain")
		}
		if !bbsProcessGUID.MatchString(d.GetProcessGuid()) {
			e.field("process_guid")
		}
	}
	if volumeMountedFilesTooLarge(d.GetVolumeMountedFiles()) {
		e.field("volumeMountedFiles")
	}
	if d.GetSetup() != nil {
		if errs := actionErrors(d.GetSetup()); len(errs) > 0 {
			e.field("setup")
			e.add(errs...)
		}
	}
	if d.GetAction() == nil {
		e.add("invalid action type")
	} else if errs := actionErrors(d.GetAction()); len(errs) > 0 {
		e.field("action")
		e.add(errs...)
	}
	if d.GetMonitor() != nil {
		if errs := actionErrors(d.GetMonitor()); len(errs) > 0 {
			e.field("monitor")
			e.add(errs...)
		}
	}
	for _, v := range d.GetEnvironmentVariables() {
		if v.GetName() == "" {
			e.add("invalid field: name cannot be blank")
		}
	}
	for _, r := range d.GetEgressRules() {
		if errs := egressRuleErrors(r); len(errs) > 0 {
			e.field("egress_rules")
			e.add(errs...)
		}
	}
	for _, c := range d.GetCachedDependencies() {
		if errs := cachedDependencyErrors(c); len(errs) > 0 {
			e.field("cached_dependency")
			e.add(errs...)
		}
	}
	exclusive := false
	for _, l := range d.GetImageLayers() {
		if errs := imageLayerErrors(l); len(errs) > 0 {
			e.field("image_layer")
			e.add(errs...)
		}
		exclusive = exclusive || l.GetLayerType() == pb.ImageLayer_EXCLUSIVE
	}
	if exclusive && d.GetLegacyDownloadUser() == "" {
		e.field("legacy_download_user")
	}
	var sidecarErrs fieldErrors
	for _, s := range d.GetSidecars() {
		if s.GetAction() == nil {
			sidecarErrs.add("invalid action type")
		} else if errs := actionErrors(s.GetAction()); len(errs) > 0 {
			sidecarErrs.field("action")
			sidecarErrs.add(errs...)
		}
		if s.GetMemoryMb() < 0 {
			sidecarErrs.field("memory_mb")
		}
		if s.GetDiskMb() < 0 {
			sidecarErrs.field("disk_mb")
		}
	}
	if len(sidecarErrs) > 0 {
		e.field("sidecars")
		e.add(sidecarErrs...)
	}
	for _, m := range d.GetVolumeMounts() {
		if m.GetDriver() == "" {
			e.add("invalid volume_mount driver")
		}
		if m.GetMode() != "r" && m.GetMode() != "rw" {
			e.add("invalid volume_mount mode")
		}
		if m.GetShared() != nil && m.GetShared().GetVolumeId() == "" {
			e.add("invalid volume_mount volume id")
		}
		if m.GetDedicated() != nil && m.GetDedicated().GetMounterId() == "" {
			e.add("invalid volume_mount mounter id")
		}
	}
	if d.GetImageUsername() == "" && d.GetImagePassword() != "" {
		e.field("image_username")
	}
	if d.GetImageUsername() != "" && d.GetImagePassword() == "" {
		e.field("image_password")
	}
	if c := d.GetCheckDefinition(); c != nil {
		var checkErrs fieldErrors
		for _, ch := range append(append([]*pb.Check(nil), c.GetChecks()...), c.GetReadinessChecks()...) {
			checkErrs.check(ch)
		}
		if len(checkErrs) > 0 {
			e.field("check_definition")
			e.add(checkErrs...)
		}
	}
	if l := d.GetLogRateLimit(); l != nil && l.GetBytesPerSecond() < -1 {
		e.field("log_rate_limit")
	}
}

func volumeMountedFilesTooLarge(files []*pb.File) bool {
	total := 0
	for _, f := range files {
		total += len(f.GetContent())
		if total > maxVolumeMountedFilesBytes {
			return true
		}
	}
	return false
}

// routesTooLarge measures routes as BBS does: the bytes of the values alone.
func routesTooLarge(r *pb.ProtoRoutes) bool {
	total := 0
	for _, v := range r.GetRoutes() {
		total += len(v)
	}
	return total > maxRoutesBytes
}

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

// validateUpdate is UpdateDesiredLRPRequest.Validate with DesiredLRPUpdate.Validate.
func validateUpdate(req *pb.UpdateDesiredLRPRequest) error {
	var e fieldErrors
	if req.GetProcessGuid() == "" {
		e.field("process_guid")
	}
	if u := req.GetUpdate(); u != nil {
		if u.GetInstances() < 0 {
			e.field("instances")
		}
		if len(u.GetAnnotation()) > maxAnnotationBytes {
			e.field("annotation")
		}
		if routesTooLarge(u.GetRoutes()) {
			e.field("routes")
		}
		if tagErrs := metricTagErrors(u.GetMetricTags(), ""); len(tagErrs) > 0 {
			e.field("metric_tags")
			e.add(tagErrs...)
		}
		if u.ImageUsername != nil && u.ImagePassword == nil {
			e.field("image_password")
		}
		if u.ImageUsername == nil && u.ImagePassword != nil {
			e.field("image_username")
		}
	}
	return e.err()
}

// validateProcessGUID is the check of BBS's requests that name one LRP.
func validateProcessGUID(guid string) error {
	var e fieldErrors
	if guid == "" {
		e.field("process_guid")
	}
	return e.err()
}
