package sshproxy

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// audit is what a session's audit line says beyond who: when it started and the bytes of
// channel data (stderr included) relayed each way.
type audit struct {
	start                    time.Time
	toInstance, fromInstance atomic.Int64
}

// log writes the session's one audit line, when it has ended (endedBy: "client closed",
// "instance closed" or "proxy stopped").
func (a *audit) log(log *zap.Logger, user string, up *upstream, endedBy string) {
	fields := []zap.Field{zap.Bool("audit", true), zap.String("user", user)}
	if up.login.App != "" {
		fields = append(fields, zap.String("app_guid", up.login.App))
	}
	if up.login.Principal != "" {
		fields = append(fields, zap.String("principal", up.login.Principal))
	}
	inst := up.target.Instance
	fields = append(fields, zap.String("process_guid", up.login.ProcessGUID), zap.Int32("index", up.login.Index),
		zap.String("instance_guid", inst.InstanceGUID), zap.String("definition_id", inst.DefinitionID),
		zap.String("cell_id", inst.CellID), zap.Time("start", a.start), zap.Duration("duration", time.Since(a.start)),
		zap.Int64("bytes_to_instance", a.toInstance.Load()), zap.Int64("bytes_from_instance", a.fromInstance.Load()),
		zap.String("ended", endedBy))
	log.Info("ssh session", fields...)
}
