package process_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/model"
)

// A crash reason quotes the last line the instance wrote, read from its output file at exit.
func TestCrashReasonQuotesTheLastOutput(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk")
	if err := os.WriteFile(junk, []byte("ok\n\x1b[31mbad\x00\xff\tbyte\x1b[0m\r\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 1000) // 2,000 bytes on one line
	for _, tc := range []struct {
		name   string
		action *model.Action
		want   string
	}{
		{"lines then exit 3", sh(`echo starting; echo "Error: cannot bind port" >&2; echo; exit 3`),
			`/bin/sh: exit status 3; last output: "Error: cannot bind port"`},
		{"no output", sh(`exit 3`), `/bin/sh: exit status 3`},
		{"exit 0", sh(`echo bye`), `action exited (status 0); last output: "bye"`},
		{"long line", sh(`echo start; printf '%s\n' "$LONG"; exit 1`),
			`/bin/sh: exit status 1; last output: "` + strings.Repeat("é", 126) + `…"`},
		{"binary junk", sh(`cat ` + junk + `; exit 1`), `/bin/sh: exit status 1; last output: "bad\x00\xff\tbyte"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newExecutor(t)
			d := def(tc.action)
			d.Env = []model.EnvironmentVariable{{Name: "LONG", Value: long}}
			runContainer(t, e, "g1", d)
			c := waitState(t, e, "g1", executor.StateCompleted)
			if c.Result != (executor.Result{Failed: true, FailureReason: tc.want}) {
				t.Fatalf("result = %+v\nwant reason %s", c.Result, tc.want)
			}
		})
	}
}

// An instance stopped for failing its health check says so, with its last line.
func TestFailedHealthCheckQuotesTheLastOutput(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "unhealthy")
	e, _ := newExecutor(t)
	d := def(sh(`echo "warning: connection pool exhausted"; exec sleep 60`))
	d.Monitor = sh(`test ! -e ` + flag)
	runContainer(t, e, "g1", d)
	waitState(t, e, "g1", executor.StateRunning)
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := waitState(t, e, "g1", executor.StateCompleted)
	want := `health check failed, instance stopped: /bin/sh: exit status 1; last output: "warning: connection pool exhausted"`
	if c.Result != (executor.Result{Failed: true, FailureReason: want}) {
		t.Fatalf("result = %+v\nwant reason %s", c.Result, want)
	}
}

// A failed setup's reason quotes its last line too, read before its output is removed.
func TestSetupFailureQuotesTheLastOutput(t *testing.T) {
	f := newFixture(t)
	d := def(sh(`sleep 60`))
	d.Setup = sh(`echo "fetching"; echo "no such bucket" >&2; exit 4`)
	_, err := f.start("g1", d)
	want := `setup failed: /bin/sh: exit status 4; last output: "no such bucket"`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}
