// Package temporalzap lets the Temporal SDK log through our zap logger.
package temporalzap

import (
	"go.temporal.io/sdk/log"
	"go.uber.org/zap"
)

// Logger adapts a *zap.Logger to the SDK's key-value log.Logger.
type Logger struct{ s *zap.SugaredLogger }

var _ log.Logger = Logger{}

// New wraps l.
func New(l *zap.Logger) Logger { return Logger{s: l.WithOptions(zap.AddCallerSkip(1)).Sugar()} }

// Debug logs at debug level.
func (l Logger) Debug(msg string, keyvals ...any) { l.s.Debugw(msg, keyvals...) }

// Info logs at info level.
func (l Logger) Info(msg string, keyvals ...any) { l.s.Infow(msg, keyvals...) }

// Warn logs at warn level.
func (l Logger) Warn(msg string, keyvals ...any) { l.s.Warnw(msg, keyvals...) }

// Error logs at error level.
func (l Logger) Error(msg string, keyvals ...any) { l.s.Errorw(msg, keyvals...) }
