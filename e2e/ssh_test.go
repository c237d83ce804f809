package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/freeport"
)

// sshTool is the system's OpenSSH client tool name (ssh, scp, sftp): the test fails, naming
// the package, when it is missing (it is part of every CI image we know; -short skips the
// test before it gets here, as it needs a Temporal server).
func sshTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("this test drives the proxy with the system's OpenSSH client: %s is missing (apt-get install openssh-client)", name)
	}
	return p
}

// sshUser runs the system's OpenSSH tools against the dev stack's proxy, with the password
// the dev mode keeps under <data>/ssh, given through SSH_ASKPASS (no terminal, no sshpass).
type sshUser struct {
	t       *testing.T
	port    int
	home    string
	askpass string
	// bind is the loopback address the client connects from ("": the system's choice):
	// the proxy limits failed logins per source address.
	bind string
}

func (d *devStack) sshUser(t *testing.T, passwordFile string) *sshUser {
	t.Helper()
	home := t.TempDir()
	askpass := filepath.Join(home, "askpass")
	if err := os.WriteFile(askpass, []byte("#!/bin/sh\ncat '"+passwordFile+"'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return &sshUser{t: t, port: d.sshPort, home: home, askpass: askpass}
}

// as is the user with another password (a one-time code, a wrong one), connecting from the
// loopback address bind.
func (u *sshUser) as(password, bind string) *sshUser {
	u.t.Helper()
	f, err := os.CreateTemp(u.home, "askpass-")
	if err != nil {
		u.t.Fatal(err)
	}
	fmt.Fprintf(f, "#!/bin/sh\necho '%s'\n", password)
	f.Close()
	os.Chmod(f.Name(), 0o700)
	return &sshUser{t: u.t, port: u.port, home: u.home, askpass: f.Name(), bind: bind}
}

// sshCode is a fresh one-time code from the dev stack's stand-in UAA, as a user gets one.
func (d *devStack) sshCode(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(bbsBin, "ssh-code", "--data-dir", d.dataDir).Output()
	if err != nil {
		t.Fatalf("bbs ssh-code: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// command is one of ssh, scp, sftp with the options that make it non-interactive: no known
// hosts, password authentication only, one try.
func (u *sshUser) command(tool string, args ...string) *exec.Cmd {
	portFlag := "-P"
	if tool == "ssh" {
		portFlag = "-p"
	}
	all := append([]string{portFlag, fmt.Sprint(u.port), "-F", "/dev/null",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password", "-o", "NumberOfPasswordPrompts=1",
		"-o", "ConnectTimeout=10"}, args...)
	if u.bind != "" {
		all = append([]string{"-o", "BindAddress=" + u.bind}, all...)
	}
	cmd := exec.Command(sshTool(u.t, tool), all...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + u.home, "TERM=xterm",
		"SSH_ASKPASS=" + u.askpass, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=none"}
	cmd.Dir = u.home
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no terminal: the password comes from SSH_ASKPASS
	return cmd
}

// run runs a command in the instance the user name picks and returns its output.
func (u *sshUser) run(user string, sshArgs ...string) (stdout, stderr string, err error) {
	cmd := u.command("ssh", append([]string{user + "@127.0.0.1"}, sshArgs...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

func (u *sshUser) mustRun(t *testing.T, user, command string) string {
	t.Helper()
	out, stderr, err := u.run(user, command)
	if err != nil {
		t.Fatalf("ssh %s %q: %v\n%s", user, command, err, stderr)
	}
	return out
}

// sshLRP is the desire request the dev mode writes for its demo app with ssh, for guid and
// the test's own demo app binary.
func (d *devStack) sshLRP(t *testing.T, guid string, n int) obj {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.dataDir, "ssh", "demo-lrp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		DesiredLRP obj `json:"desired_lrp"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	lrp := req.DesiredLRP
	lrp["process_guid"], lrp["instances"] = guid, n
	lrp["routes"].(map[string]any)["cf-router"] = []obj{{"hostnames": []string{guid + ".example.com"}, "port": 8080}}
	actions := lrp["action"].(map[string]any)["codependent"].(map[string]any)["actions"].([]any)
	actions[0].(map[string]any)["run"].(map[string]any)["path"] = demoBin
	return lrp
}

// onlyOn reports whether the index runs one RUNNING instance, of the definition, and nothing
// else.
func (d *devStack) onlyOn(guid string, index int32, def string) bool {
	var at []instance
	for _, a := range d.instances(guid) {
		if a.Index == index {
			at = append(at, a)
		}
	}
	return len(at) == 1 && at[0].State == "RUNNING" && at[0].DefinitionID == def
}

// session is a long ssh session that echoes what it is sent, to prove it alive.
type session struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	ended chan error
}

func (u *sshUser) startSession(user string) *session {
	u.t.Helper()
	cmd := u.command("ssh", user+"@127.0.0.1", `echo ready; while read l; do echo "got $l"; done`)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		u.t.Fatal(err)
	}
	s := &session{t: u.t, cmd: cmd, in: in, lines: make(chan string, 16), ended: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		s.ended <- cmd.Wait()
	}()
	u.t.Cleanup(func() { cmd.Process.Kill() })
	s.expect("ready", "the session to start (stderr: "+stderr.String()+")")
	return s
}

func (s *session) expect(want, what string) {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok || l != want {
			s.t.Fatalf("%s: got %q (open %v), want %q", what, l, ok, want)
		}
	case <-time.After(15 * time.Second):
		s.t.Fatalf("%s: no %q within 15 s", what, want)
	}
}

// ping proves the session alive: what it is sent comes back.
func (s *session) ping(word string) {
	s.t.Helper()
	fmt.Fprintln(s.in, word)
	s.expect("got "+word, "the session answering "+word)
}

// TestSSHIntoInstancesThroughARollingUpdate is the ssh part of issue 12 with the system's
// OpenSSH client against `bbs dev`: commands in each index, scp and sftp, a forwarded port,
// a terminal, clear refusals; an open session on the last index survives the rollout of the
// others and ends only when its instance stops, after the drain; a crash is reported to the
// stand-in Cloud Controller with the definition that crashed.
func TestSSHIntoInstancesThroughARollingUpdate(t *testing.T) {
	const n = 3
	d := startDev(t)
	t.Cleanup(func() {
		if t.Failed() { // the daemons log into their cells' logs
			logs, _ := filepath.Glob(filepath.Join(d.dataDir, "cell-*.log"))
			for _, f := range logs {
				b, _ := os.ReadFile(f)
				t.Logf("%s:\n%s", f, b[max(0, len(b)-20000):])
			}
		}
	})
	u := d.sshUser(t, filepath.Join(d.dataDir, "ssh", "proxy_password"))
	web := d.sshLRP(t, "web", n)
	web["log_guid"] = webApp // as Cloud Controller sets it: cf users name the app guid
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": web}, nil)
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("plain", 0)}, nil)
	d.waitFor(t, "3 RUNNING on web", 60*time.Second, func() bool { return d.allOn("web", "web", n) })

	t.Run("exec in each index", func(t *testing.T) {
		for i := range n {
			out := u.mustRun(t, fmt.Sprintf("diego:web/%d", i), "echo $CF_INSTANCE_INDEX $DEMO_VERSION; test -z \"$SSHD_HOST_KEY\" && echo no-key")
			if want := fmt.Sprintf("%d v1\nno-key\n", i); out != want {
				t.Fatalf("index %d: %q, want %q", i, out, want)
			}
		}
	})

	t.Run("refusals say why", func(t *testing.T) {
		wrong := &sshUser{t: t, port: u.port, home: u.home, askpass: filepath.Join(u.home, "wrong")}
		os.WriteFile(wrong.askpass, []byte("#!/bin/sh\necho not-the-password\n"), 0o700)
		for _, tc := range []struct {
			who  *sshUser
			user string
			want string
		}{
			{wrong, "diego:web/0", "bbs ssh-proxy: permission denied"},
			{u, "root", "is not of the form diego:<process_guid>/<index>"},
			{u, "diego:nope/0", `there is no LRP with process guid "nope"`},
			{u, "diego:web/3", `index 3 is out of range: LRP "web" has 3 instance(s) (indices 0-2)`},
			{u, "diego:plain/0", `LRP "plain" has no diego-ssh route`},
		} {
			_, stderr, err := tc.who.run(tc.user, "true")
			if err == nil || !strings.Contains(stderr, tc.want) {
				t.Errorf("ssh %s: %v, stderr %q; want a refusal saying %q", tc.user, err, stderr, tc.want)
			}
		}
	})

	t.Run("scp and sftp", func(t *testing.T) {
		// scp and sftp read "user@host:path" up to the first colon: the user goes in -o User
		// (as with cf ssh's user cf:<guid>/<index>).
		local := filepath.Join(u.home, "up.txt")
		os.WriteFile(local, []byte("uploaded by scp\n"), 0o644)
		if out, err := u.command("scp", "-o", "User=diego:web/1", local, "127.0.0.1:up.txt").CombinedOutput(); err != nil {
			t.Fatalf("scp up: %v\n%s", err, out)
		}
		if out := u.mustRun(t, "diego:web/1", "cat up.txt; pwd"); !strings.HasPrefix(out, "uploaded by scp\n") {
			t.Fatalf("the file in the instance: %q", out)
		}
		if out, err := u.command("scp", "-o", "User=diego:web/1", "127.0.0.1:up.txt", filepath.Join(u.home, "down.txt")).CombinedOutput(); err != nil {
			t.Fatalf("scp down: %v\n%s", err, out)
		}
		sftp := u.command("sftp", "-o", "User=diego:web/1", "127.0.0.1")
		sftp.Stdin = strings.NewReader("put " + local + " via-sftp.txt\nget up.txt " + filepath.Join(u.home, "sftp.txt") + "\nls\n")
		if out, err := sftp.CombinedOutput(); err != nil || !strings.Contains(string(out), "via-sftp.txt") {
			t.Fatalf("sftp: %v\n%s", err, out)
		}
		for _, f := range []string{"down.txt", "sftp.txt"} {
			if b, _ := os.ReadFile(filepath.Join(u.home, f)); string(b) != "uploaded by scp\n" {
				t.Fatalf("%s: %q", f, b)
			}
		}
	})

	t.Run("a forwarded port reaches the app", func(t *testing.T) {
		local := freeport.Port(t)
		fwd := u.command("ssh", "-N", "-o", "ExitOnForwardFailure=yes", "-L", fmt.Sprintf("127.0.0.1:%d:localhost:8080", local), "diego:web/2@127.0.0.1")
		if err := fwd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { fwd.Process.Kill(); fwd.Wait() }()
		var body struct {
			Index string `json:"index"`
		}
		d.waitFor(t, "the app through ssh -L", 15*time.Second, func() bool {
			res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", local))
			if err != nil {
				return false
			}
			defer res.Body.Close()
			return json.NewDecoder(res.Body).Decode(&body) == nil
		})
		if body.Index != "2" {
			t.Fatalf("the forwarded port reached index %q, want 2", body.Index)
		}
	})

	t.Run("a terminal", func(t *testing.T) {
		out, stderr, err := u.run("diego:web/0", "-tt", "tty; echo term=$TERM")
		if err != nil {
			t.Fatalf("ssh -tt: %v\n%s", err, stderr)
		}
		if !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "term=xterm") {
			t.Fatalf("ssh -tt: %q", out)
		}
	})

	t.Run("cf ssh with one-time codes", func(t *testing.T) { cfSSH(t, d, u) })
	t.Run("failed logins are limited", func(t *testing.T) { failedLoginsAreLimited(t, d, u) })

	t.Run("a session through a rolling update", func(t *testing.T) {
		s := u.startSession("diego:web/2")
		s.ping("before")
		def := obj{"definition_id": "v2"}
		lrp := d.sshLRP(t, "web", n)
		for _, k := range []string{"rootfs", "memory_mb", "disk_mb", "ports", "action", "check_definition"} {
			def[k] = lrp[k]
		}
		def["env"] = []obj{{"name": "DEMO_VERSION", "value": "v2"}}
		d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": def}}, nil)

		// Indices 0 and 1 roll; the session on index 2 is untouched.
		d.waitFor(t, "indices 0 and 1 on v2", 90*time.Second, func() bool { return d.onlyOn("web", 0, "v2") && d.onlyOn("web", 1, "v2") })
		s.ping("after-0-and-1")
		if out := u.mustRun(t, "diego:web/0", "echo $DEMO_VERSION"); out != "v2\n" {
			t.Fatalf("index 0 after its update answers %q", out)
		}

		// Index 2's old instance is retired: the session lasts through the drain...
		var retiring bool
		d.waitFor(t, "the v1 instance at index 2 to retire", 90*time.Second, func() bool {
			for _, a := range d.instances("web") {
				if a.Index == 2 && a.DefinitionID == "web" && a.Retiring {
					retiring = true
				}
			}
			return retiring
		})
		s.ping("while-draining")
		// ... and ends when the instance stops.
		select {
		case err := <-s.ended:
			if err == nil {
				t.Fatalf("the session ended cleanly; want it cut by the instance stopping")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the session outlived its retired instance by 30 s")
		}
		d.waitFor(t, "every index on v2", 60*time.Second, func() bool { return d.allOn("web", "v2", n) })
		if out := u.mustRun(t, "diego:web/2", "echo $DEMO_VERSION"); out != "v2\n" {
			t.Fatalf("index 2 after its update answers %q", out)
		}
	})

	t.Run("a crash is reported to Cloud Controller", func(t *testing.T) {
		// Killing the daemon ends the codependent action: the instance crashes.
		u.run("diego:web/1", "kill -9 $PPID")
		ccLog := filepath.Join(d.dataDir, "cc.log")
		var line string
		d.waitFor(t, "the crash in the stand-in Cloud Controller's log", 30*time.Second, func() bool {
			b, _ := os.ReadFile(ccLog)
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, "POST /internal/v4/apps/web/crashed ") {
					line = l
					return true
				}
			}
			return false
		})
		var report map[string]any
		if err := json.Unmarshal([]byte(line[strings.Index(line, "{"):]), &report); err != nil {
			t.Fatalf("report %q: %v", line, err)
		}
		if report["index"] != float64(1) || report["reason"] != "CRASHED" || report["definition_id"] != "v2" ||
			report["definition"] != "current" || report["crash_count"] != float64(1) || report["instance"] == "" || report["cell_id"] == "" {
			t.Fatalf("crash report %v", report)
		}
	})
}

// webApp is the app guid of the test's LRP "web" (its log_guid).
const webApp = "0b7a3c51-8e1f-4d1b-a7f4-3c9e2d6b5a10"

// cfSSH logs in as `cf ssh` does, with the dev stack's stand-ins for UAA and Cloud
// Controller: ssh, scp and sftp each with a fresh code from `bbs ssh-code`; a code is good
// once; the refusals say why; the session's audit line names the app, the UAA user and the
// bytes.
func cfSSH(t *testing.T, d *devStack, u *sshUser) {
	user := "cf:" + webApp + "/1"
	code := d.sshCode(t)
	if out := u.as(code, "127.0.0.11").mustRun(t, user, "echo index=$CF_INSTANCE_INDEX"); out != "index=1\n" {
		t.Fatalf("cf ssh: %q", out)
	}
	if _, stderr, err := u.as(code, "127.0.0.11").run(user, "true"); err == nil || !strings.Contains(stderr, "bbs ssh-proxy: the one-time code is not valid") {
		t.Fatalf("the code again: %v, %q", err, stderr)
	}
	d.p.waitOutput(t, `"user": "`+user+`", "app_guid": "`+webApp+`", "principal": "dev", "process_guid": "web", "index": 1`, 10*time.Second)
	d.p.waitOutput(t, `"bytes_to_instance": 0, "bytes_from_instance": 8, "ended": "client closed"`, 10*time.Second)

	local := filepath.Join(u.home, "cf-up.txt")
	os.WriteFile(local, []byte("uploaded as cf\n"), 0o644)
	if out, err := u.as(d.sshCode(t), "").command("scp", "-o", "User="+user, local, "127.0.0.1:cf-up.txt").CombinedOutput(); err != nil {
		t.Fatalf("scp as cf: %v\n%s", err, out)
	}
	if out, err := u.as(d.sshCode(t), "").command("scp", "-o", "User="+user, "127.0.0.1:cf-up.txt", filepath.Join(u.home, "cf-down.txt")).CombinedOutput(); err != nil {
		t.Fatalf("scp down as cf: %v\n%s", err, out)
	}
	sftp := u.as(d.sshCode(t), "").command("sftp", "-o", "User="+user, "127.0.0.1")
	sftp.Stdin = strings.NewReader("get cf-up.txt " + filepath.Join(u.home, "cf-sftp.txt") + "\nls\n")
	if out, err := sftp.CombinedOutput(); err != nil || !strings.Contains(string(out), "cf-up.txt") {
		t.Fatalf("sftp as cf: %v\n%s", err, out)
	}
	for _, f := range []string{"cf-down.txt", "cf-sftp.txt"} {
		if b, _ := os.ReadFile(filepath.Join(u.home, f)); string(b) != "uploaded as cf\n" {
			t.Fatalf("%s: %q", f, b)
		}
	}

	for _, tc := range []struct{ user, code, want string }{
		{user, "not-a-code", "the one-time code is not valid"},
		{"cf:6d0c0d0e-0000-4000-8000-000000000000/0", d.sshCode(t), `app "6d0c0d0e-0000-4000-8000-000000000000" not found`},
		{"cf:" + webApp + "/3", d.sshCode(t), `index 3 is out of range: LRP "web" has 3 instance(s) (indices 0-2)`},
		{"cf:" + webApp, d.sshCode(t), "has no /<index> after the app guid"},
		{"root", d.sshCode(t), "is not of the form diego:<process_guid>/<index> or cf:<app_guid>/<index>"},
	} {
		_, stderr, err := u.as(tc.code, "127.0.0.12").run(tc.user, "true")
		if err == nil || !strings.Contains(stderr, "bbs ssh-proxy: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("ssh %s: %v, stderr %q; want a refusal saying %q", tc.user, err, stderr, tc.want)
		}
	}
}

// failedLoginsAreLimited: five failed logins from one address refuse it, even with the
// right password, while another address gets in; five for one user (from five addresses,
// at any index) refuse that user, even with a good code. Each part has addresses and users
// of its own: the other subtests' failures do not count here.
func failedLoginsAreLimited(t *testing.T, d *devStack, u *sshUser) {
	for i := range 5 {
		if _, stderr, _ := u.as("wrong", "127.0.0.13").run(fmt.Sprintf("diego:x%d/0", i), "true"); !strings.Contains(stderr, "permission denied") {
			t.Fatalf("failure %d: %q", i, stderr)
		}
	}
	password, _ := os.ReadFile(filepath.Join(d.dataDir, "ssh", "proxy_password"))
	if _, stderr, err := u.as(string(password), "127.0.0.13").run("diego:web/0", "true"); err == nil || !strings.Contains(stderr, "bbs ssh-proxy: too many failed logins from 127.0.0.13: try again in ") {
		t.Fatalf("the right password from a limited address: %v, %q", err, stderr)
	}
	if out := u.as(string(password), "127.0.0.14").mustRun(t, "diego:web/0", "echo in"); out != "in\n" {
		t.Fatalf("another address: %q", out)
	}

	const app = "5e6f7a8b-0000-4000-8000-00000000000a"
	for i := range 5 {
		if _, stderr, _ := u.as("bad-code", fmt.Sprintf("127.0.0.%d", 20+i)).run(fmt.Sprintf("cf:%s/%d", app, i), "true"); !strings.Contains(stderr, "the one-time code is not valid") {
			t.Fatalf("failure %d for the user: %q", i, stderr)
		}
	}
	_, stderr, err := u.as(d.sshCode(t), "127.0.0.25").run("cf:"+app+"/0", "true")
	if err == nil || !strings.Contains(stderr, `bbs ssh-proxy: too many failed logins for user "cf:`+app+`": try again in `) {
		t.Fatalf("a good code for a limited user: %v, %q", err, stderr)
	}
}
