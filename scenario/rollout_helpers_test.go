package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
)

// --- the cluster with rollouts ---

// waitLRP is waitFor that, on timeout, shows where the LRP and its rollout stand.
func (c *rolloutCluster) waitLRP(guid, what string, within time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			var r struct {
				Rollout *model.Rollout `json:"rollout"`
			}
			_ = c.post("/v1/rollouts/get", map[string]string{"process_guid": guid}, &r)
			c.t.Fatalf("timed out after %s waiting for %s\nrollout: %+v\ninstances: %s", within, what, r.Rollout, describe(c.instances(guid)))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type rolloutCluster struct {
	*cluster
	chaos *chaos
}

type rolloutOptions struct {
	cells int // default 3
	// indexDeadline is the RolloutClient's IndexDeadline (0: the workflow's default).
	indexDeadline time.Duration
	// converge runs convergence every 250 ms with fastRestarts, so that crashed instances are
	// retried within the test.
	converge bool
	// beforeStop runs before each stop request of the rollout activities
	// (testcluster.Options.BeforeStop).
	beforeStop func(c *testcluster.Cluster, ch *chaos, lrps []model.ActualLRP)
}

// newRolloutCluster starts a cluster whose rollouts run on the shared Temporal dev server, on
// a task queue of t's own, and whose cells run the chaos backend.
func newRolloutCluster(t *testing.T, o rolloutOptions) *rolloutCluster {
	t.Helper()
	ch := newChaos()
	opts := testcluster.Options{
		Cells: o.cells, Zones: 2, Capacity: roomy,
		Backend:       ch.backend,
		IndexDeadline: o.indexDeadline,
	}
	if opts.Cells == 0 {
		opts.Cells = 3
	}
	if o.beforeStop != nil {
		opts.BeforeStop = func(c *testcluster.Cluster, lrps []model.ActualLRP) { o.beforeStop(c, ch, lrps) }
	}
	if o.converge {
		policy := fastRestarts()
		opts.RestartPolicy, opts.ConvergeEvery = &policy, 250*time.Millisecond
	}
	return &rolloutCluster{cluster: startCluster(t, opts), chaos: ch}
}

func env(name, value string) model.EnvironmentVariable {
	return model.EnvironmentVariable{Name: name, Value: value}
}

// simDefinition is simLRP's definition (instances start after 20 ms and pass their check),
// with more environment.
func simDefinition(vars ...model.EnvironmentVariable) model.LRPDefinition {
	return simLRP("x", 1, vars...).LRPDefinition
}

func (c *rolloutCluster) createDeployment(guid string, n int32, id string, def model.LRPDefinition) {
	c.t.Helper()
	c.mustPost("/v1/lrp_deployments/create", model.LRPDeploymentCreate{ProcessGUID: guid, Domain: "cf-apps",
		Instances: n, DefinitionID: id, Definition: &def}, nil)
}

func (c *rolloutCluster) updateDeployment(guid, id string, def model.LRPDefinition) {
	c.t.Helper()
	c.updateWithStrategy(guid, id, def, nil)
}

// updateWithStrategy updates the deployment to def with the rollout's own strategy (nil: the
// LRP's and the server's).
func (c *rolloutCluster) updateWithStrategy(guid, id string, def model.LRPDefinition, strategy map[string]any) {
	c.t.Helper()
	req := map[string]any{"process_guid": guid, "update": model.LRPDeploymentUpdate{DefinitionID: &id, Definition: &def}}
	if strategy != nil {
		req["strategy"] = strategy
	}
	c.mustPost("/v1/lrp_deployments/update", req, nil)
}

// seedTolerance is the strategy under which a new definition's failures are the seeds' (seed
// 000): an index is retried as long as the test runs, never failed for its crashes.
var seedTolerance = map[string]any{"failure": map[string]any{"max_crashes": 1000}, "index_deadline_ms": 3_600_000}

func (c *rolloutCluster) scale(guid string, n int32) {
	c.t.Helper()
	c.mustPost("/v1/lrp_deployments/update", map[string]any{"process_guid": guid,
		"update": model.LRPDeploymentUpdate{Instances: &n}}, nil)
}

func (c *rolloutCluster) deployment(guid string) model.LRPDeployment {
	c.t.Helper()
	var resp struct {
		LRPDeployment model.LRPDeployment `json:"lrp_deployment"`
	}
	c.mustPost("/v1/lrp_deployments/get_by_process_guid", map[string]string{"process_guid": guid}, &resp)
	return resp.LRPDeployment
}

func (c *rolloutCluster) rollout(guid string) model.Rollout {
	c.t.Helper()
	var resp struct {
		Rollout model.Rollout `json:"rollout"`
	}
	c.mustPost("/v1/rollouts/get", map[string]string{"process_guid": guid}, &resp)
	return resp.Rollout
}

func (c *rolloutCluster) groupAt(guid string, index int32) model.ActualLRPGroup {
	c.t.Helper()
	var resp struct {
		Group model.ActualLRPGroup `json:"actual_lrp_group"`
	}
	c.mustPost("/v1/actual_lrp_groups/get_by_process_guid_and_index", map[string]any{"process_guid": guid, "index": index}, &resp)
	return resp.Group
}

// progress asks the rollout workflow (QueryProgress).
func (c *rolloutCluster) progress(guid string) workflows.RolloutProgress {
	c.t.Helper()
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := c.Temporal.QueryWorkflow(qctx, model.RolloutWorkflowID(guid), "", workflows.QueryProgress)
	if err != nil {
		c.t.Fatalf("query progress: %v", err)
	}
	var p workflows.RolloutProgress
	if err := v.Get(&p); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// searchAttribute reads a keyword search attribute of the LRP's (latest) rollout workflow.
func (c *rolloutCluster) searchAttribute(guid, name string) string {
	c.t.Helper()
	d, err := c.Temporal.DescribeWorkflowExecution(ctx, model.RolloutWorkflowID(guid), "")
	if err != nil {
		c.t.Fatal(err)
	}
	p := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[name]
	if p == nil {
		return ""
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
		c.t.Fatal(err)
	}
	return s
}

// waitListedInPhase waits until a fleet query by RolloutPhase — what an operator runs,
// `temporal workflow list --query "RolloutPhase='reverting'"`, narrowed to the LRP's
// workflow: the dev server is shared — lists the LRP's rollout workflow (visibility follows
// the workflow's upserts within a moment).
func (c *rolloutCluster) waitListedInPhase(guid, phase string) {
	c.t.Helper()
	query := fmt.Sprintf("%s = '%s' AND %s = '%s'", workflows.SearchAttrRolloutPhase.GetName(), phase,
		workflows.SearchAttrProcessGUID.GetName(), guid)
	c.waitLRP(guid, "a list by "+query+" to find the rollout", 10*time.Second, func() bool {
		resp, err := c.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			c.t.Fatalf("list %s: %v", query, err)
		}
		for _, e := range resp.GetExecutions() {
			if e.GetExecution().GetWorkflowId() == model.RolloutWorkflowID(guid) {
				return true
			}
		}
		return false
	})
}

// instanceOf is the ORDINARY instance of def at index, or nil.
func (c *cluster) instanceOf(guid, def string, index int32) *model.ActualLRP {
	c.t.Helper()
	for _, a := range c.instances(guid) {
		if a.DefinitionID == def && a.Index == index && a.Presence == model.PresenceOrdinary {
			return &a
		}
	}
	return nil
}

// allOn reports whether the LRP has exactly n instances, each RUNNING def at its own index.
func (c *cluster) allOn(guid, def string, n int32) bool {
	c.t.Helper()
	l := c.instances(guid)
	if len(l) != int(n) {
		return false
	}
	seen := map[int32]bool{}
	for _, a := range l {
		if a.State != model.StateRunning || a.DefinitionID != def || a.Index >= n || seen[a.Index] {
			return false
		}
		seen[a.Index] = true
	}
	return true
}

// runningOn reports whether every index below n has a RUNNING instance of def.
func (c *cluster) runningOn(guid, def string, n int32) bool {
	c.t.Helper()
	seen := map[int32]bool{}
	for _, a := range c.instances(guid) {
		if a.State == model.StateRunning && a.DefinitionID == def && a.Index < n {
			seen[a.Index] = true
		}
	}
	return len(seen) == int(n)
}

func (c *cluster) countOn(guid, def string) int {
	c.t.Helper()
	k := 0
	for _, a := range c.instances(guid) {
		if a.DefinitionID == def {
			k++
		}
	}
	return k
}

// containersOf counts the LRP's containers on every cell.
func (c *cluster) containersOf(guid string) int {
	k := 0
	for _, sc := range c.Cells {
		for _, ctr := range sc.Exec.Containers() {
			if ctr.Key.ProcessGUID == guid {
				k++
			}
		}
	}
	return k
}

func describe(l []model.ActualLRP) string {
	var b bytes.Buffer
	for _, a := range l {
		ready := ""
		if a.NotReady {
			ready = " not-ready"
		}
		if a.Retiring {
			ready += " retiring"
		}
		fmt.Fprintf(&b, "[%d %s %s%s crashes=%d %s] ", a.Index, a.DefinitionID, a.State, ready, a.CrashCount, a.Presence)
	}
	return b.String()
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// --- raw API calls ---

// apiError is an error answer of the API, with its HTTP status.
type apiError struct {
	status int
	err    *model.Error
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %v", e.status, e.err) }
func (e *apiError) Unwrap() error { return e.err }

func (c *cluster) post(path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.Post(c.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer r.Body.Close()
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if r.StatusCode != http.StatusOK {
		var e struct {
			Error *model.Error `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error != nil {
			return &apiError{status: r.StatusCode, err: e.Error}
		}
		return fmt.Errorf("POST %s: %d %s", path, r.StatusCode, raw)
	}
	if resp != nil {
		return json.Unmarshal(raw, resp)
	}
	return nil
}

func (c *cluster) mustPost(path string, req, resp any) {
	c.t.Helper()
	if err := c.post(path, req, resp); err != nil {
		c.t.Fatalf("POST %s: %v", path, err)
	}
}

// expectAPIError checks err's type and, when status is not 0, its HTTP status.
func expectAPIError(t *testing.T, err error, status int, typ model.ErrorType) {
	t.Helper()
	if !model.IsType(err, typ) {
		t.Fatalf("got %v, want %s", err, typ)
	}
	var ae *apiError
	if status != 0 && (!errors.As(err, &ae) || ae.status != status) {
		t.Fatalf("got %v, want status %d", err, status)
	}
}
