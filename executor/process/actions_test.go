package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

func TestSerialStopsAtTheFirstFailure(t *testing.T) {
	f := newFixture(t)
	in := f.mustStart("g1", def(serial(sh("echo one >> out"), sh("exit 3"), sh("echo three >> out"))))
	err := waitExit(t, in)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("err = %v", err)
	}
	dir := instanceDir(t, f, "g1")
	if b, _ := os.ReadFile(filepath.Join(dir, "out")); string(b) != "one\n" {
		t.Fatalf("out = %q", b)
	}
}

func TestParallelRunsEverythingAndFailsIfAnyFailed(t *testing.T) {
	f := newFixture(t)
	in := f.mustStart("g1", def(&model.Action{Parallel: &model.ParallelAction{Actions: []*model.Action{
		sh("sleep 0.3; echo a > a"), sh("exit 5"), sh("echo c > c"),
	}}}))
	err := waitExit(t, in)
	if err == nil || !strings.Contains(err.Error(), "exit status 5") {
		t.Fatalf("err = %v", err)
	}
	dir := instanceDir(t, f, "g1")
	for _, name := range []string{"a", "c"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("parallel action %s did not finish: %v", name, err)
		}
	}
	in = f.mustStart("g2", def(&model.Action{Parallel: &model.ParallelAction{Actions: []*model.Action{sh("true"), sh("true")}}}))
	if err := waitExit(t, in); err != nil {
		t.Fatalf("parallel success: err = %v", err)
	}
}

func TestCodependentEndsWhenTheFirstExits(t *testing.T) {
	for _, tc := range []struct {
		name, exit string
		wantErr    string
	}{
		{"success", "exit 0", ""},
		{"failure", "exit 7", "exit status 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			begin := time.Now()
			in := f.mustStart("g1", def(&model.Action{Codependent: &model.CodependentAction{Actions: []*model.Action{
				sh("exec sleep 30"), sh("sleep 0.1; " + tc.exit),
			}}}))
			err := waitExit(t, in)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(errString(err), "interrupted") {
				t.Fatalf("the interrupted sibling counted as a failure: %v", err)
			}
			if time.Since(begin) > 10*time.Second {
				t.Fatal("the sleeping sibling was not stopped")
			}
		})
	}
}

func TestTimeoutFailsASlowAction(t *testing.T) {
	f := newFixture(t)
	in := f.mustStart("g1", def(&model.Action{Timeout: &model.TimeoutAction{TimeoutMs: 200, Action: sh("exec sleep 30")}}))
	if err := waitExit(t, in); err == nil || err.Error() != "timed out after 200ms" {
		t.Fatalf("err = %v", err)
	}
	in = f.mustStart("g2", def(&model.Action{Timeout: &model.TimeoutAction{TimeoutMs: 10000, Action: sh("true")}}))
	if err := waitExit(t, in); err != nil {
		t.Fatalf("fast action under a timeout: err = %v", err)
	}
}

func TestTryIgnoresFailure(t *testing.T) {
	f := newFixture(t)
	in := f.mustStart("g1", def(serial(&model.Action{Try: &model.TryAction{Action: sh("exit 9")}}, sh("echo ok > ok"))))
	if err := waitExit(t, in); err != nil {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(instanceDir(t, f, "g1"), "ok")); err != nil {
		t.Fatal("the step after try did not run")
	}
}

func TestEmitProgressAndOutputPrefix(t *testing.T) {
	f := newFixture(t)
	in := f.mustStart("guid-0123456789", def(serial(
		&model.Action{EmitProgress: &model.EmitProgressAction{
			StartMessage: "starting up", SuccessMessage: "started", Action: sh("echo hello; echo oops >&2"),
		}},
		&model.Action{EmitProgress: &model.EmitProgressAction{
			StartMessage: "second", FailureMessagePrefix: "second failed", Action: sh("exit 2"),
		}},
	)))
	if err := waitExit(t, in); err == nil {
		t.Fatal("expected failure")
	}
	in.Stop(time.Second) // flushes the output
	out := f.out.String()
	for _, want := range []string{
		"[pg/3 guid-012] starting up\n", "[pg/3 guid-012] hello\n", "[pg/3 guid-012] oops\n",
		"[pg/3 guid-012] started\n", "[pg/3 guid-012] second\n", "[pg/3 guid-012] second failed: /bin/sh: exit status 2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestEnvironmentAndDirectories(t *testing.T) {
	f := newFixture(t)
	d := def(&model.Action{Run: &model.RunAction{
		Path: "/bin/sh", Args: []string{"-c", `echo "$FOO $BAR $PORT $(pwd)" > ../env; exec sleep 30`},
		Dir: "app", Env: []model.EnvironmentVariable{{Name: "BAR", Value: "from-run"}, {Name: "FOO", Value: "overridden"}},
	}})
	d.Setup = sh("mkdir app")
	d.Env = []model.EnvironmentVariable{{Name: "FOO", Value: "from-def"}}
	d.Ports = []uint32{8080}
	f.mustStart("g1", d)
	dir := instanceDir(t, f, "g1")
	got := readFileEventually(t, filepath.Join(dir, "env"))
	fields := strings.Fields(got)
	if len(fields) != 4 || fields[0] != "overridden" || fields[1] != "from-run" || fields[3] != filepath.Join(dir, "app") {
		t.Fatalf("env line = %q (dir %s)", got, dir)
	}
	if _, err := strconv.Atoi(fields[2]); err != nil {
		t.Fatalf("PORT = %q", fields[2])
	}
}

func TestSetupFailureIsAStartError(t *testing.T) {
	f := newFixture(t)
	d := def(sh("exec sleep 30"))
	d.Setup = serial(sh("echo x > x"), sh("exit 4"))
	_, err := f.start("g1", d)
	if err == nil || !strings.HasPrefix(err.Error(), "setup failed: ") || !strings.Contains(err.Error(), "exit status 4") {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(backendDir(t, f)); len(entries) != 1 || entries[0].Name() != ".state" {
		t.Fatalf("instance directory left behind: %v", entries)
	}
	if entries, _ := os.ReadDir(filepath.Join(backendDir(t, f), ".state")); len(entries) != 0 {
		t.Fatalf("instance state left behind: %v", entries)
	}
}

func TestCancelledSetupStops(t *testing.T) {
	f := newFixture(t)
	d := def(sh("exec sleep 30"))
	d.Setup = sh("exec sleep 30")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	begin := time.Now()
	if _, err := f.backend.Start(ctx, f.spec("g1", d)); err == nil {
		t.Fatal("start succeeded although cancelled during setup")
	}
	if time.Since(begin) > 10*time.Second {
		t.Fatal("cancelling did not interrupt setup")
	}
}

func TestUnsupportedActionsAreRefused(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		d    model.LRPDefinition
		want string
	}{
		{"download in setup", func() model.LRPDefinition {
			d := def(sh("true"))
			d.Setup = &model.Action{Download: &model.DownloadAction{From: "http://x/y.tgz", To: "."}}
			return d
		}(), "download actions are not supported by the process executor"},
		{"upload nested in action", def(serial(sh("true"), &model.Action{Upload: &model.UploadAction{From: "a", To: "http://x"}})),
			"upload actions are not supported by the process executor"},
	} {
		if _, err := f.start("g1", tc.d); err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func instanceDir(t *testing.T, f *fixture, guid string) string { return filepath.Join(f.workDir, guid) }

func backendDir(t *testing.T, f *fixture) string { return f.workDir }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
