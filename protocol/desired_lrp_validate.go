package protocol

import (
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

// bbsGUID is the pattern of BBS's process and task guids.
var bbsGUID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

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
		if !bbsGUID.MatchString(d.GetProcessGuid()) {
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
	e.cachedDependencies(d.GetCachedDependencies())
	e.imageLayers(d.GetImageLayers(), d.GetLegacyDownloadUser())
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

// cachedDependencies is BBS's validateCachedDependencies, for desired LRPs and tasks.
func (e *fieldErrors) cachedDependencies(deps []*pb.CachedDependency) {
	for _, c := range deps {
		if errs := cachedDependencyErrors(c); len(errs) > 0 {
			e.field("cached_dependency")
			e.add(errs...)
		}
	}
}

// imageLayers is BBS's validateImageLayers, for desired LRPs and tasks: an EXCLUSIVE layer
// is downloaded as the legacy download user, so it needs one.
func (e *fieldErrors) imageLayers(layers []*pb.ImageLayer, legacyDownloadUser string) {
	exclusive := false
	for _, l := range layers {
		if errs := imageLayerErrors(l); len(errs) > 0 {
			e.field("image_layer")
			e.add(errs...)
		}
		exclusive = exclusive || l.GetLayerType() == pb.ImageLayer_EXCLUSIVE
	}
	if exclusive && legacyDownloadUser == "" {
		e.field("legacy_download_user")
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
