package executor_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/sim"
)

func TestWithLastOutput(t *testing.T) {
	long := strings.Repeat("é", 300) // 600 bytes, cut between characters only
	for _, tc := range []struct {
		name, tail, want string
	}{
		{"no output", "", "exit status 1"},
		{"blank output", "\n \r\n\t\n", "exit status 1"},
		{"last line", "starting\nError: cannot bind port\n", `exit status 1; last output: "Error: cannot bind port"`},
		{"blank lines after it", "first\r\nlast\r\n\n  \n", `exit status 1; last output: "last"`},
		{"unterminated", "first\n  last", `exit status 1; last output: "last"`},
		{"colours", "\x1b[31mError:\x1b[0m \x1b[1;4mgone\x1b[m\n\x1b[0m\n", `exit status 1; last output: "Error: gone"`},
		{"junk", "a\x00b\x07c\xff\xfe\"q\"\\\td\x1b", `exit status 1; last output: "a\x00b\ac\xff\xfe\"q\"\\\td\x1b"`},
		{"long", "x\n" + long + "\n", `exit status 1; last output: "` + strings.Repeat("é", 126) + `…"`},
		{"tail starting in its line", strings.Repeat("a", executor.OutputTailBytes),
			`exit status 1; last output: "…` + strings.Repeat("a", 250) + `…"`},
		{"full tail ending in a whole line", strings.Repeat("a", executor.OutputTailBytes-4) + "\nok\n",
			`exit status 1; last output: "ok"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := executor.WithLastOutput("exit status 1", []byte(tc.tail))
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			quoted := strings.TrimPrefix(got, "exit status 1; last output: ")
			if n := len(quoted) - 2; n > 256 || !utf8.ValidString(got) {
				t.Fatalf("quoted line of %d bytes, valid UTF-8 %v", n, utf8.ValidString(got))
			}
		})
	}
}

func TestCrashReasonQuotesTheLastOutput(t *testing.T) {
	e := newExecutor(t, sim.New(1), nil)
	reserveAndRun(t, e, "g1", simDef("SIM_CRASH_AFTER_MS", "20", "SIM_LAST_OUTPUT", "listening\nError: cannot bind port\n"))
	c := waitState(t, e, "g1", executor.StateCompleted)
	want := `simulated crash after 20ms (SIM_CRASH_AFTER_MS); last output: "Error: cannot bind port"`
	if c.Result != (executor.Result{Failed: true, FailureReason: want}) {
		t.Fatalf("result = %+v", c.Result)
	}
}
