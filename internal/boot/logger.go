package boot

import (
	"flag"
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// LogLevelFlag registers the --log-level flag every command has.
func LogLevelFlag(fs *flag.FlagSet) *string {
	return fs.String("log-level", EnvOr("BBS_LOG_LEVEL", "info"), "debug, info, warn or error [BBS_LOG_LEVEL]")
}

// NewLogger builds the process's one logger: JSON for services, console for the stacks an
// operator watches in a terminal (`bbs dev`, `bbs cluster`).
func NewLogger(level string, console bool) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	if console {
		cfg = zap.NewDevelopmentConfig()
		cfg.DisableStacktrace = true
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	return cfg.Build()
}
