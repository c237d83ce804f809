package protocol

import (
	"net/url"

	"github.com/updatable-lrps/bbs/protocol/pb"
)

// BBS's validation of the task requests (bbs models/task_requests.go and TaskDefinition's
// Validate), rule for rule and in its order, with its messages, as desired_lrp_validate.go
// does for desired LRPs. Our model's rules (model.Task.Validate, which the task service
// runs) come after, on what passed.

// validateDesireTask is DesireTaskRequest.Validate.
func validateDesireTask(req *pb.DesireTaskRequest) error {
	var e fieldErrors
	if !bbsGUID.MatchString(req.GetTaskGuid()) {
		e.field("task_guid")
	}
	if req.GetDomain() == "" {
		e.field("domain")
	}
	if req.GetTaskDefinition() == nil {
		e.field("task_definition")
	} else {
		e.taskDefinition(req.GetTaskDefinition())
	}
	return e.err()
}

// taskDefinition is TaskDefinition.Validate. Unlike a desired LRP's, a task's bad egress
// rule is named without its reasons.
func (e *fieldErrors) taskDefinition(d *pb.TaskDefinition) {
	if d.GetRootFs() == "" {
		e.field("rootfs")
	} else if u, err := url.Parse(d.GetRootFs()); err != nil || u.Scheme == "" {
		e.field("rootfs")
	}
	if d.GetAction() == nil {
		e.add("invalid action type")
	} else if errs := actionErrors(d.GetAction()); len(errs) > 0 {
		e.field("action")
		e.add(errs...)
	}
	if d.GetMemoryMb() < 0 {
		e.field("memory_mb")
	}
	if d.GetDiskMb() < 0 {
		e.field("disk_mb")
	}
	if l := d.GetLogRateLimit(); l != nil && l.GetBytesPerSecond() < -1 {
		e.field("log_rate_limit")
	}
	if d.GetMaxPids() < 0 {
		e.field("max_pids")
	}
	if len(d.GetAnnotation()) > maxAnnotationBytes {
		e.field("annotation")
	}
	for _, r := range d.GetEgressRules() {
		if len(egressRuleErrors(r)) > 0 {
			e.field("egress_rules")
		}
	}
	if d.GetImageUsername() == "" && d.GetImagePassword() != "" {
		e.field("image_username")
	}
	if d.GetImageUsername() != "" && d.GetImagePassword() == "" {
		e.field("image_password")
	}
	e.cachedDependencies(d.GetCachedDependencies())
	e.imageLayers(d.GetImageLayers(), d.GetLegacyDownloadUser())
}

// validateTaskGUID is TaskGuidRequest's and TaskByGuidRequest's Validate: any guid but "",
// which the store then finds or not.
func validateTaskGUID(guid string) error {
	var e fieldErrors
	if guid == "" {
		e.field("task_guid")
	}
	return e.err()
}

// validateCellRequest is the Validate of the requests of a cell (start, complete): a guid of
// BBS's pattern and the cell.
func validateCellRequest(guid, cellID string) error {
	var e fieldErrors
	if !bbsGUID.MatchString(guid) {
		e.field("task_guid")
	}
	if cellID == "" {
		e.field("cell_id")
	}
	return e.err()
}

// validateReason is FailTaskRequest's and RejectTaskRequest's Validate: a guid of BBS's
// pattern and a reason, which BBS names failure_reason in both.
func validateReason(guid, reason string) error {
	var e fieldErrors
	if !bbsGUID.MatchString(guid) {
		e.field("task_guid")
	}
	if reason == "" {
		e.field("failure_reason")
	}
	return e.err()
}
