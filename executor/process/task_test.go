package process_test

import (
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/executor"
)

// Tasks run their action once in a real process; the result file is read from the
// container's directory when the action exits 0.

func runTask(t *testing.T, e *executor.Executor, guid, script, resultFile string) executor.Container {
	t.Helper()
	spec := executor.RunSpec{Guid: guid, Definition: def(run("/bin/sh", "-c", script)),
		Task: &executor.TaskSpec{TaskGUID: "task-" + guid, ResultFile: resultFile}}
	if _, err := e.Reserve(spec); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(guid); err != nil {
		t.Fatal(err)
	}
	var c executor.Container
	eventually(t, guid+" to complete", func() bool {
		c, _ = e.Get(guid)
		return c.State == executor.StateCompleted
	})
	if c.TaskGUID != "task-"+guid {
		t.Fatalf("container task guid = %q", c.TaskGUID)
	}
	return c
}

func TestTaskResultFile(t *testing.T) {
	e, _ := newExecutor(t)
	c := runTask(t, e, "ok", `mkdir -p tmp && printf '{"droplet":"%s"}' "$CF_INSTANCE_GUID" > tmp/result.json`, "/tmp/result.json")
	if c.Result.Failed || c.Result.TaskResult != `{"droplet":"ok"}` {
		t.Fatalf("result = %+v", c.Result)
	}

	c = runTask(t, e, "fails", `echo boom >&2; exit 3`, "/tmp/result.json")
	if !c.Result.Failed || c.Result.Stopped || !strings.Contains(c.Result.FailureReason, "3") {
		t.Fatalf("failed task result = %+v", c.Result)
	}

	c = runTask(t, e, "big", `mkdir -p tmp && head -c 10241 /dev/zero > tmp/r`, "tmp/r")
	if !c.Result.Failed || !strings.Contains(c.Result.FailureReason, "larger than 10240 bytes") {
		t.Fatalf("oversized result = %+v", c.Result)
	}

	c = runTask(t, e, "missing", `true`, "/no/such/file")
	if !c.Result.Failed || !strings.Contains(c.Result.FailureReason, "failed to read result file") {
		t.Fatalf("missing result = %+v", c.Result)
	}

	// A path cannot lead out of the container's directory.
	c = runTask(t, e, "escape", `true`, "../../../../../../etc/hostname")
	if !c.Result.Failed {
		t.Fatalf("result read outside the container: %+v", c.Result)
	}

	c = runTask(t, e, "no-file", `exit 0`, "")
	if c.Result.Failed || c.Result.TaskResult != "" {
		t.Fatalf("no result file = %+v", c.Result)
	}
}
