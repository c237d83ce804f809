package executor

import (
	"context"
	"io"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// StartSpec is what a Backend needs to start one instance: the definition, the ports and
// address allocated for it, the full environment (the definition's env plus PORT,
// CF_INSTANCE_* and INSTANCE_*), and where its output goes.
type StartSpec struct {
	Guid string
	Key  model.ActualLRPKey
	// TaskGUID is set, and Key empty, for a task: its action runs once and its exit is the
	// task's outcome.
	TaskGUID   string
	Definition model.LRPDefinition
	Address    string
	Ports      []model.PortMapping
	Env        []model.EnvironmentVariable
	Log        io.Writer
}

// Backend starts instances: local processes or simulated ones.
type Backend interface {
	// Start runs the definition's setup and then starts its action. It returns once the
	// action has started, or with an error when setup failed or the action could not start
	// (the error text becomes the crash reason).
	Start(ctx context.Context, spec StartSpec) (Instance, error)
}

// Instance is one started instance.
type Instance interface {
	// Done is closed when the action exits; Err then tells how (nil for exit status 0).
	Done() <-chan struct{}
	Err() error
	// HasMonitor reports whether the definition has a monitor action or a check definition.
	HasMonitor() bool
	// Check runs the health check once; nil means healthy.
	Check(ctx context.Context) error
	// CheckReadiness runs the definition's readiness checks once; nil means ready (and
	// always, for a definition without readiness checks).
	CheckReadiness(ctx context.Context) error
	// Stop ends the instance: a polite signal first, then a forced kill after grace. It
	// returns once everything the instance started has exited.
	Stop(grace time.Duration)
}
