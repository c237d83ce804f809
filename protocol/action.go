package protocol

import (
	"encoding/json"
	"math"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
)

// The action tree, checks and environment of a definition, between BBS's messages and our
// model. Every action kind converts both ways (the model stores download and upload actions
// even though our cells refuse to run them); what the model has no field for (a run action's
// volume_mounted_files, a timeout's deprecated_timeout_ns, readiness checks, check intervals)
// lives only in the definition's protobuf, which the protocol answers with.

func actionToModel(a *pb.Action) *model.Action {
	if a == nil {
		return nil
	}
	m := &model.Action{}
	if d := a.GetDownloadAction(); d != nil {
		m.Download = &model.DownloadAction{Artifact: d.GetArtifact(), From: d.GetFrom(), To: d.GetTo(), CacheKey: d.GetCacheKey(),
			LogSource: d.GetLogSource(), User: d.GetUser(), ChecksumAlgorithm: d.GetChecksumAlgorithm(), ChecksumValue: d.GetChecksumValue()}
	}
	if u := a.GetUploadAction(); u != nil {
		m.Upload = &model.UploadAction{Artifact: u.GetArtifact(), From: u.GetFrom(), To: u.GetTo(), LogSource: u.GetLogSource(), User: u.GetUser()}
	}
	if r := a.GetRunAction(); r != nil {
		m.Run = &model.RunAction{Path: r.GetPath(), Args: r.GetArgs(), Dir: r.GetDir(), Env: envToModel(r.GetEnv()),
			ResourceLimits: resourceLimitsToJSON(r.GetResourceLimits()), User: r.GetUser(), LogSource: r.GetLogSource(),
			SuppressLogOutput: r.GetSuppressLogOutput()}
	}
	if t := a.GetTimeoutAction(); t != nil {
		m.Timeout = &model.TimeoutAction{Action: actionToModel(t.GetAction()), TimeoutMs: t.GetTimeoutMs(), LogSource: t.GetLogSource()}
	}
	if e := a.GetEmitProgressAction(); e != nil {
		m.EmitProgress = &model.EmitProgressAction{Action: actionToModel(e.GetAction()), StartMessage: e.GetStartMessage(),
			SuccessMessage: e.GetSuccessMessage(), FailureMessagePrefix: e.GetFailureMessagePrefix(), LogSource: e.GetLogSource()}
	}
	if t := a.GetTryAction(); t != nil {
		m.Try = &model.TryAction{Action: actionToModel(t.GetAction()), LogSource: t.GetLogSource()}
	}
	if p := a.GetParallelAction(); p != nil {
		m.Parallel = &model.ParallelAction{Actions: actionsToModel(p.GetActions()), LogSource: p.GetLogSource()}
	}
	if s := a.GetSerialAction(); s != nil {
		m.Serial = &model.SerialAction{Actions: actionsToModel(s.GetActions()), LogSource: s.GetLogSource()}
	}
	if c := a.GetCodependentAction(); c != nil {
		m.Codependent = &model.CodependentAction{Actions: actionsToModel(c.GetActions()), LogSource: c.GetLogSource()}
	}
	return m
}

func actionsToModel(as []*pb.Action) []*model.Action {
	if as == nil {
		return nil
	}
	out := make([]*model.Action, len(as))
	for i, a := range as {
		out[i] = actionToModel(a)
	}
	return out
}

func actionFromModel(m *model.Action) *pb.Action {
	if m == nil {
		return nil
	}
	a := &pb.Action{}
	if d := m.Download; d != nil {
		a.DownloadAction = &pb.DownloadAction{Artifact: d.Artifact, From: d.From, To: d.To, CacheKey: d.CacheKey,
			LogSource: d.LogSource, User: d.User, ChecksumAlgorithm: d.ChecksumAlgorithm, ChecksumValue: d.ChecksumValue}
	}
	if u := m.Upload; u != nil {
		a.UploadAction = &pb.UploadAction{Artifact: u.Artifact, From: u.From, To: u.To, LogSource: u.LogSource, User: u.User}
	}
	if r := m.Run; r != nil {
		a.RunAction = &pb.RunAction{Path: r.Path, Args: r.Args, Dir: r.Dir, Env: envFromModel(r.Env),
			ResourceLimits: resourceLimitsFromJSON(r.ResourceLimits), User: r.User, LogSource: r.LogSource,
			SuppressLogOutput: r.SuppressLogOutput}
	}
	if t := m.Timeout; t != nil {
		a.TimeoutAction = &pb.TimeoutAction{Action: actionFromModel(t.Action), TimeoutMs: t.TimeoutMs, LogSource: t.LogSource}
	}
	if e := m.EmitProgress; e != nil {
		a.EmitProgressAction = &pb.EmitProgressAction{Action: actionFromModel(e.Action), StartMessage: e.StartMessage,
			SuccessMessage: e.SuccessMessage, FailureMessagePrefix: e.FailureMessagePrefix, LogSource: e.LogSource}
	}
	if t := m.Try; t != nil {
		a.TryAction = &pb.TryAction{Action: actionFromModel(t.Action), LogSource: t.LogSource}
	}
	if p := m.Parallel; p != nil {
		a.ParallelAction = &pb.ParallelAction{Actions: actionsFromModel(p.Actions), LogSource: p.LogSource}
	}
	if s := m.Serial; s != nil {
		a.SerialAction = &pb.SerialAction{Actions: actionsFromModel(s.Actions), LogSource: s.LogSource}
	}
	if c := m.Codependent; c != nil {
		a.CodependentAction = &pb.CodependentAction{Actions: actionsFromModel(c.Actions), LogSource: c.LogSource}
	}
	return a
}

func actionsFromModel(ms []*model.Action) []*pb.Action {
	if ms == nil {
		return nil
	}
	out := make([]*pb.Action, len(ms))
	for i, m := range ms {
		out[i] = actionFromModel(m)
	}
	return out
}

// resourceLimits is ResourceLimits in BBS's JSON form: a limit that is absent is not 0.
type resourceLimits struct {
	Nofile *uint64 `json:"nofile,omitempty"`
	Nproc  *uint64 `json:"nproc,omitempty"`
}

func resourceLimitsToJSON(l *pb.ResourceLimits) json.RawMessage {
	if l == nil {
		return nil
	}
	b, _ := json.Marshal(resourceLimits{Nofile: l.Nofile, Nproc: l.Nproc}) // two numbers: cannot fail
	return b
}

// resourceLimitsFromJSON reads what the JSON API stored; what does not parse is left out.
func resourceLimitsFromJSON(b json.RawMessage) *pb.ResourceLimits {
	var l resourceLimits
	if len(b) == 0 || json.Unmarshal(b, &l) != nil {
		return nil
	}
	return &pb.ResourceLimits{Nofile: l.Nofile, Nproc: l.Nproc}
}

func envToModel(env []*pb.EnvironmentVariable) []model.EnvironmentVariable {
	if env == nil {
		return nil
	}
	out := make([]model.EnvironmentVariable, len(env))
	for i, e := range env {
		out[i] = model.EnvironmentVariable{Name: e.GetName(), Value: e.GetValue()}
	}
	return out
}

func envFromModel(env []model.EnvironmentVariable) []*pb.EnvironmentVariable {
	if env == nil {
		return nil
	}
	out := make([]*pb.EnvironmentVariable, len(env))
	for i, e := range env {
		out[i] = &pb.EnvironmentVariable{Name: e.Name, Value: e.Value}
	}
	return out
}

// checksToModel keeps the liveness and readiness checks, which our cells run; the check
// intervals stay in the definition's protobuf.
func checksToModel(c *pb.CheckDefinition) *model.CheckDefinition {
	if c == nil {
		return nil
	}
	return &model.CheckDefinition{LogSource: c.GetLogSource(),
		Checks: convertAll(c.GetChecks(), checkToModel), ReadinessChecks: convertAll(c.GetReadinessChecks(), checkToModel)}
}

func checkToModel(ch *pb.Check) model.Check {
	var mc model.Check
	if t := ch.GetTcpCheck(); t != nil {
		mc.TCPCheck = &model.TCPCheck{Port: t.GetPort(), ConnectTimeoutMs: toInt64(t.GetConnectTimeoutMs())}
	}
	if h := ch.GetHttpCheck(); h != nil {
		mc.HTTPCheck = &model.HTTPCheck{Port: h.GetPort(), Path: h.GetPath(), RequestTimeoutMs: toInt64(h.GetRequestTimeoutMs())}
	}
	return mc
}

func checksFromModel(m *model.CheckDefinition) *pb.CheckDefinition {
	if m == nil {
		return nil
	}
	return &pb.CheckDefinition{LogSource: m.LogSource,
		Checks: convertAll(m.Checks, checkFromModel), ReadinessChecks: convertAll(m.ReadinessChecks, checkFromModel)}
}

func checkFromModel(mc model.Check) *pb.Check {
	ch := &pb.Check{}
	if t := mc.TCPCheck; t != nil {
		ch.TcpCheck = &pb.TCPCheck{Port: t.Port, ConnectTimeoutMs: toUint64(t.ConnectTimeoutMs)}
	}
	if h := mc.HTTPCheck; h != nil {
		ch.HttpCheck = &pb.HTTPCheck{Port: h.Port, Path: h.Path, RequestTimeoutMs: toUint64(h.RequestTimeoutMs)}
	}
	return ch
}

// convertAll converts each element of in; none stays nil.
func convertAll[T, U any](in []T, convert func(T) U) []U {
	if len(in) == 0 {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = convert(v)
	}
	return out
}

func toInt64(u uint64) int64 {
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(u)
}

func toUint64(i int64) uint64 {
	if i < 0 {
		return 0
	}
	return uint64(i)
}
