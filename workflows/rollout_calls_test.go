package workflows_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	bbsworker "github.com/updatable-lrps/bbs/worker"

	"github.com/updatable-lrps/bbs/internal/temporalzap"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap/zaptest"
)

// A replay only compares the kinds of commands with the history (an activity of the same
// type and id, a marker of the same name, an upsert, a continue-as-new): not the inputs of
// local activities, the values of the search attributes, the state a run carries into the
// next, nor the output. replayCalls replays a history and lists all of those as text, one
// call a line, so that a golden file (<history>.calls, written from the code that recorded
// the history) pins them too.
func replayCalls(t *testing.T, history string) []string {
	t.Helper()
	rec := &callRecorder{}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{Interceptors: []interceptor.WorkerInterceptor{rec}})
	if err != nil {
		t.Fatal(err)
	}
	bbsworker.RegisterWorkflows(r)
	if err := r.ReplayWorkflowHistoryFromJSONFile(temporalzap.New(zaptest.NewLogger(t)), history); err != nil {
		t.Fatal(err)
	}
	return rec.lines
}

// checkCalls compares the calls of a replay with the golden file next to the history; with
// RECORD_CALLS set, a missing golden file is written instead (an existing one never is).
func checkCalls(t *testing.T, history string, got []string) {
	t.Helper()
	golden := strings.TrimSuffix(history, ".json") + ".calls"
	b, err := os.ReadFile(golden)
	if errors.Is(err, os.ErrNotExist) && os.Getenv("RECORD_CALLS") != "" {
		if err := os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", golden)
		return
	}
	if err != nil {
		t.Fatalf("%v (RECORD_CALLS=1 writes it from the code that recorded the history)", err)
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	got, want = withoutDefaultVersions(got), withoutDefaultVersions(want)
	if slices.Equal(got, want) {
		return
	}
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("call %d differs from %s:\n got  %s\n want %s", i+1, golden, g, w)
		}
	}
}

// withoutDefaultVersions drops the GetVersion calls that answered DefaultVersion: such a call
// writes no marker and changes no command — it is how a history recorded before a change
// meets that change's GetVersion — so a later versioned change must not make the goldens of
// older histories differ. Every call that issues a command is still compared.
func withoutDefaultVersions(lines []string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(l string) bool {
		return strings.HasPrefix(l, "VERSION ") && strings.HasSuffix(l, fmt.Sprintf(" %d", workflow.DefaultVersion))
	})
}

type callRecorder struct {
	interceptor.WorkerInterceptorBase
	mu    sync.Mutex
	lines []string
}

func (c *callRecorder) add(kind, name string, args ...any) {
	parts := []string{kind, name}
	for _, a := range args {
		parts = append(parts, canonicalJSON(a))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, strings.Join(parts, " "))
}

// canonicalJSON is v's JSON with object keys sorted, so that moving a field within a struct
// (not a change on the wire) does not count.
func canonicalJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	b, _ = json.Marshal(x)
	return string(b)
}

func (c *callRecorder) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &callInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, rec: c}
}

type callInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	rec *callRecorder
}

func (i *callInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&callOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, rec: i.rec})
}

func (i *callInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	out, err := i.Next.ExecuteWorkflow(ctx, in)
	var can *workflow.ContinueAsNewError
	switch {
	case errors.As(err, &can):
		i.rec.add("END", "continue-as-new")
	case err != nil:
		i.rec.add("END", "error", err.Error())
	default:
		i.rec.add("END", "output", out)
	}
	return out, err
}

type callOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	rec *callRecorder
}

func (o *callOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.rec.add("ACTIVITY", activityType, args...)
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *callOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.rec.add("LOCAL", activityType, args...)
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

func (o *callOutbound) UpsertTypedSearchAttributes(ctx workflow.Context, updates ...temporal.SearchAttributeUpdate) error {
	values := map[string]any{}
	for k, v := range temporal.NewSearchAttributes(updates...).GetUntypedValues() {
		values[k.GetName()] = v
	}
	o.rec.add("UPSERT", "search-attributes", values)
	return o.Next.UpsertTypedSearchAttributes(ctx, updates...)
}

func (o *callOutbound) GetVersion(ctx workflow.Context, changeID string, minSupported, maxSupported workflow.Version) workflow.Version {
	v := o.Next.GetVersion(ctx, changeID, minSupported, maxSupported)
	o.rec.add("VERSION", changeID, v)
	return v
}

func (o *callOutbound) NewContinueAsNewError(ctx workflow.Context, wfn any, args ...any) error {
	// The type the next run is of: a name, or the function (whose name every recorded run
	// of the legacy type continued as).
	typ, ok := wfn.(string)
	if !ok {
		typ = "RolloutWorkflow"
	}
	o.rec.add("CONTINUE-AS-NEW", typ, args...)
	return o.Next.NewContinueAsNewError(ctx, wfn, args...)
}
