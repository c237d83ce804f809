package model

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strconv"
)

// LRPDefinition is everything that affects how an instance runs (seed 001). An LRP has one or
// more definitions; each ActualLRP runs exactly one of them.
type LRPDefinition struct {
	DefinitionID       string                `json:"definition_id,omitempty"`
	RootFS             string                `json:"rootfs"`
	Env                []EnvironmentVariable `json:"env,omitempty"`
	Setup              *Action               `json:"setup,omitempty"`
	Action             *Action               `json:"action,omitempty"`
	Monitor            *Action               `json:"monitor,omitempty"`
	CheckDefinition    *CheckDefinition      `json:"check_definition,omitempty"`
	StartTimeoutMs     int64                 `json:"start_timeout_ms,omitempty"`
	MemoryMB           int32                 `json:"memory_mb"`
	DiskMB             int32                 `json:"disk_mb"`
	CPUWeight          uint32                `json:"cpu_weight,omitempty"`
	Privileged         bool                  `json:"privileged,omitempty"`
	Ports              []uint32              `json:"ports,omitempty"`
	LogSource          string                `json:"log_source,omitempty"`
	LogGUID            string                `json:"log_guid,omitempty"`
	MetricsGUID        string                `json:"metrics_guid,omitempty"`
	EgressRules        json.RawMessage       `json:"egress_rules,omitempty"`
	CachedDependencies json.RawMessage       `json:"cached_dependencies,omitempty"`
	VolumeMounts       json.RawMessage       `json:"volume_mounts,omitempty"`
	Network            json.RawMessage       `json:"network,omitempty"`
	PlacementTags      []string              `json:"placement_tags,omitempty"`
	MaxPids            int32                 `json:"max_pids,omitempty"`
	// Protobuf is the definition as a BBS-protocol client sent it (a protobuf LRPDefinition
	// without its id), kept so that the protocol answers with every field it was given,
	// those this model has no place for included; the fields above are filled from it. Nil
	// for a definition created through the JSON API. Only package protocol reads it.
	Protobuf []byte `json:"-"`
}

// EnvironmentVariable is one NAME=value pair given to an instance.
type EnvironmentVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CheckDefinition lists declarative health checks, an alternative to a monitor action.
type CheckDefinition struct {
	Checks []Check `json:"checks"`
	// ReadinessChecks, when there are any, decide whether a RUNNING instance is routable:
	// its cell runs them for as long as it runs, and routers send it traffic only while they
	// pass (Diego's readiness checks). A rollout moves on from an index only once the new
	// instance is ready.
	ReadinessChecks []Check `json:"readiness_checks,omitempty"`
	LogSource       string  `json:"log_source,omitempty"`
}

// Check is one health check: exactly one of TCP or HTTP.
type Check struct {
	TCPCheck  *TCPCheck  `json:"tcp_check,omitempty"`
	HTTPCheck *HTTPCheck `json:"http_check,omitempty"`
}

// TCPCheck passes when a connection to Port succeeds.
type TCPCheck struct {
	Port             uint32 `json:"port"`
	ConnectTimeoutMs int64  `json:"connect_timeout_ms,omitempty"`
}

// HTTPCheck passes when GET Path on Port answers 200.
type HTTPCheck struct {
	Port             uint32 `json:"port"`
	Path             string `json:"path,omitempty"`
	RequestTimeoutMs int64  `json:"request_timeout_ms,omitempty"`
}

// Limits of the validation rules (API.md, following BBS).
const (
	MaxGUIDLength      = 255
	MaxInstances       = 10000
	MaxAnnotationBytes = 10 * 1024
	MaxRoutesBytes     = 128 * 1024
	MaxCPUWeight       = 100
	maxPort            = 65535
)

var guidPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// ValidateGUID checks a process guid or definition id: ^[a-zA-Z0-9_-]+$, 1–255 characters.
func ValidateGUID(field, v string) error {
	if v == "" {
		return invalid("%s is required", field)
	}
	if len(v) > MaxGUIDLength {
		return invalid("%s is longer than %d characters", field, MaxGUIDLength)
	}
	if !guidPattern.MatchString(v) {
		return invalid("%s %q may contain only letters, digits, '_' and '-'", field, v)
	}
	return nil
}

// Validate checks the definition by BBS's rules. The definition id is checked by the caller,
// because a DesiredLRP may omit it (it then defaults to the process guid).
func (d *LRPDefinition) Validate() error {
	if d.DefinitionID != "" {
		if err := ValidateGUID("definition_id", d.DefinitionID); err != nil {
			return err
		}
	}
	if err := validateContainer(d.RootFS, d.MemoryMB, d.DiskMB, d.MaxPids, d.CPUWeight); err != nil {
		return err
	}
	if d.StartTimeoutMs < 0 {
		return invalid("start_timeout_ms must be >= 0")
	}
	if err := validateEnv("env", d.Env); err != nil {
		return err
	}
	if d.Setup != nil {
		if err := d.Setup.validate("setup", 0); err != nil {
			return err
		}
	}
	if err := d.Action.validate("action", 0); err != nil {
		return err
	}
	if d.Monitor != nil {
		if err := d.Monitor.validate("monitor", 0); err != nil {
			return err
		}
	}
	if d.CheckDefinition != nil {
		if err := d.CheckDefinition.validate(); err != nil {
			return err
		}
	}
	for i, p := range d.Ports {
		if p == 0 || p > maxPort {
			return invalid("ports[%d] must be between 1 and %d", i, maxPort)
		}
	}
	return validateContainerFields(d.PlacementTags, d.EgressRules, d.CachedDependencies, d.VolumeMounts, d.Network)
}

// validateContainer checks what LRP and task definitions share about their container: a
// rootfs URL with a scheme and non-negative sizes.
func validateContainer(rootfs string, memoryMB, diskMB, maxPids int32, cpuWeight uint32) error {
	if rootfs == "" {
		return invalid("rootfs is required")
	}
	if u, err := url.Parse(rootfs); err != nil || u.Scheme == "" {
		return invalid("rootfs %q must be a URL with a scheme (e.g. docker:///busybox or preloaded:cflinuxfs4)", rootfs)
	}
	if memoryMB < 0 {
		return invalid("memory_mb must be >= 0")
	}
	if diskMB < 0 {
		return invalid("disk_mb must be >= 0")
	}
	if maxPids < 0 {
		return invalid("max_pids must be >= 0")
	}
	if cpuWeight > MaxCPUWeight {
		return invalid("cpu_weight must be <= %d", MaxCPUWeight)
	}
	return nil
}

// validateContainerFields checks what LRP and task definitions share about the container
// beyond what runs in it: placement tags and the opaque JSON the store keeps as given.
func validateContainerFields(placementTags []string, egressRules, cachedDependencies, volumeMounts, network json.RawMessage) error {
	for i, t := range placementTags {
		if t == "" {
			return invalid("placement_tags[%d] must not be empty", i)
		}
	}
	for _, f := range []struct {
		name  string
		value json.RawMessage
		kind  byte
	}{
		{"egress_rules", egressRules, '['},
		{"cached_dependencies", cachedDependencies, '['},
		{"volume_mounts", volumeMounts, '['},
		{"network", network, '{'},
	} {
		if err := validateOpaque(f.name, f.value, f.kind); err != nil {
			return err
		}
	}
	return nil
}

func (c *CheckDefinition) validate() error {
	if err := validateChecks("check_definition.checks", c.Checks); err != nil {
		return err
	}
	return validateChecks("check_definition.readiness_checks", c.ReadinessChecks)
}

func validateChecks(name string, checks []Check) error {
	for i, ch := range checks {
		field := name + "[" + itoa(i) + "]"
		switch {
		case (ch.TCPCheck == nil) == (ch.HTTPCheck == nil):
			return invalid("%s must have exactly one of tcp_check or http_check", field)
		case ch.TCPCheck != nil:
			if ch.TCPCheck.Port == 0 || ch.TCPCheck.Port > maxPort {
				return invalid("%s.tcp_check.port must be between 1 and %d", field, maxPort)
			}
		case ch.HTTPCheck != nil:
			if ch.HTTPCheck.Port == 0 || ch.HTTPCheck.Port > maxPort {
				return invalid("%s.http_check.port must be between 1 and %d", field, maxPort)
			}
		}
	}
	return nil
}

func validateEnv(field string, env []EnvironmentVariable) error {
	for i, e := range env {
		if e.Name == "" {
			return invalid("%s[%d].name is required", field, i)
		}
	}
	return nil
}

// validateOpaque checks a field we store as given: when present it must be JSON of the right
// kind (an array or an object), so a client learns of a mistake now rather than on a cell.
func validateOpaque(field string, v json.RawMessage, kind byte) error {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	first := firstNonSpace(v)
	if first != kind {
		want := "an array"
		if kind == '{' {
			want = "an object"
		}
		return invalid("%s must be %s", field, want)
	}
	return nil
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

func invalid(format string, args ...any) *Error { return Errorf(ErrInvalidRequest, format, args...) }

func itoa(i int) string { return strconv.Itoa(i) }
