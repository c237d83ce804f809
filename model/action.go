package model

import "encoding/json"

// Action is one step of an LRP's setup, action or monitor, in BBS's JSON shape: an object with
// exactly one key naming the kind of action.
type Action struct {
	Download     *DownloadAction     `json:"download,omitempty"`
	Upload       *UploadAction       `json:"upload,omitempty"`
	Run          *RunAction          `json:"run,omitempty"`
	Timeout      *TimeoutAction      `json:"timeout,omitempty"`
	EmitProgress *EmitProgressAction `json:"emit_progress,omitempty"`
	Try          *TryAction          `json:"try,omitempty"`
	Parallel     *ParallelAction     `json:"parallel,omitempty"`
	Serial       *SerialAction       `json:"serial,omitempty"`
	Codependent  *CodependentAction  `json:"codependent,omitempty"`
}

// DownloadAction fetches an artifact into the container.
type DownloadAction struct {
	Artifact          string `json:"artifact,omitempty"`
	From              string `json:"from"`
	To                string `json:"to"`
	CacheKey          string `json:"cache_key,omitempty"`
	LogSource         string `json:"log_source,omitempty"`
	User              string `json:"user,omitempty"`
	ChecksumAlgorithm string `json:"checksum_algorithm,omitempty"`
	ChecksumValue     string `json:"checksum_value,omitempty"`
}

// UploadAction sends a file out of the container.
type UploadAction struct {
	Artifact  string `json:"artifact,omitempty"`
	From      string `json:"from"`
	To        string `json:"to"`
	LogSource string `json:"log_source,omitempty"`
	User      string `json:"user,omitempty"`
}

// RunAction runs a process.
type RunAction struct {
	Path              string                `json:"path"`
	Args              []string              `json:"args,omitempty"`
	Dir               string                `json:"dir,omitempty"`
	Env               []EnvironmentVariable `json:"env,omitempty"`
	ResourceLimits    json.RawMessage       `json:"resource_limits,omitempty"`
	User              string                `json:"user,omitempty"`
	LogSource         string                `json:"log_source,omitempty"`
	SuppressLogOutput bool                  `json:"suppress_log_output,omitempty"`
}

// TimeoutAction fails its action when it runs longer than TimeoutMs.
type TimeoutAction struct {
	Action    *Action `json:"action"`
	TimeoutMs int64   `json:"timeout_ms"`
	LogSource string  `json:"log_source,omitempty"`
}

// EmitProgressAction logs messages around its action.
type EmitProgressAction struct {
	Action               *Action `json:"action"`
	StartMessage         string  `json:"start_message,omitempty"`
	SuccessMessage       string  `json:"success_message,omitempty"`
	FailureMessagePrefix string  `json:"failure_message_prefix,omitempty"`
	LogSource            string  `json:"log_source,omitempty"`
}

// TryAction runs its action and ignores its failure.
type TryAction struct {
	Action    *Action `json:"action"`
	LogSource string  `json:"log_source,omitempty"`
}

// ParallelAction runs its actions at once and fails when any fails, after all finish.
type ParallelAction struct {
	Actions   []*Action `json:"actions"`
	LogSource string    `json:"log_source,omitempty"`
}

// SerialAction runs its actions one after another, stopping at the first failure.
type SerialAction struct {
	Actions   []*Action `json:"actions"`
	LogSource string    `json:"log_source,omitempty"`
}

// CodependentAction runs its actions at once; when any exits, the others are stopped.
type CodependentAction struct {
	Actions   []*Action `json:"actions"`
	LogSource string    `json:"log_source,omitempty"`
}

// maxActionDepth bounds nesting so that a hostile definition cannot exhaust the stack.
const maxActionDepth = 32

// Validate checks that the action has exactly one kind and that every nested action is valid.
func (a *Action) Validate() error { return a.validate("action", 0) }

func (a *Action) validate(field string, depth int) error {
	if a == nil {
		return invalid("%s is required", field)
	}
	if depth > maxActionDepth {
		return invalid("%s nests more than %d actions deep", field, maxActionDepth)
	}
	kinds := 0
	for _, set := range []bool{a.Download != nil, a.Upload != nil, a.Run != nil, a.Timeout != nil,
		a.EmitProgress != nil, a.Try != nil, a.Parallel != nil, a.Serial != nil, a.Codependent != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return invalid("%s must have exactly one kind (run, serial, parallel, codependent, timeout, try, download, upload, emit_progress), has %d", field, kinds)
	}
	switch {
	case a.Download != nil:
		if a.Download.From == "" || a.Download.To == "" {
			return invalid("%s.download needs from and to", field)
		}
		if (a.Download.ChecksumAlgorithm == "") != (a.Download.ChecksumValue == "") {
			return invalid("%s.download needs both checksum_algorithm and checksum_value, or neither", field)
		}
	case a.Upload != nil:
		if a.Upload.From == "" || a.Upload.To == "" {
			return invalid("%s.upload needs from and to", field)
		}
	case a.Run != nil:
		if a.Run.Path == "" {
			return invalid("%s.run.path is required", field)
		}
		if err := validateEnv(field+".run.env", a.Run.Env); err != nil {
			return err
		}
	case a.Timeout != nil:
		if a.Timeout.TimeoutMs <= 0 {
			return invalid("%s.timeout.timeout_ms must be positive", field)
		}
		return a.Timeout.Action.validate(field+".timeout.action", depth+1)
	case a.EmitProgress != nil:
		return a.EmitProgress.Action.validate(field+".emit_progress.action", depth+1)
	case a.Try != nil:
		return a.Try.Action.validate(field+".try.action", depth+1)
	case a.Parallel != nil:
		return validateActions(field+".parallel", a.Parallel.Actions, depth)
	case a.Serial != nil:
		return validateActions(field+".serial", a.Serial.Actions, depth)
	case a.Codependent != nil:
		return validateActions(field+".codependent", a.Codependent.Actions, depth)
	}
	return nil
}

func validateActions(field string, actions []*Action, depth int) error {
	if len(actions) == 0 {
		return invalid("%s.actions must not be empty", field)
	}
	for i, a := range actions {
		if err := a.validate(field+".actions["+itoa(i)+"]", depth+1); err != nil {
			return err
		}
	}
	return nil
}
