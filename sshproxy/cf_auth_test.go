package sshproxy

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/crypto/ssh"
)

const clientSecret = "client-s3cret"

// fakeCF is UAA's token endpoint and Cloud Controller's ssh_access route, as the proxy
// meets them: codes good once, a token per code, and an answer per app guid.
type fakeCF struct {
	srv *httptest.Server
	mu  sync.Mutex
	// codes are the codes issued and not yet exchanged.
	codes map[string]bool
	// apps is Cloud Controller's answer per app guid: 200 gives the process guid "web".
	apps map[string]int
	// uaaStatus, when set, is the token endpoint's answer to every exchange.
	uaaStatus           int
	exchanges, accesses int
	tokens              map[string]bool
	seen                []string // what each call carried
}

func newFakeCF(t *testing.T) *fakeCF {
	f := &fakeCF{codes: map[string]bool{}, apps: map[string]int{}, tokens: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.exchanges++
		id, secret, _ := r.BasicAuth()
		r.ParseForm()
		f.seen = append(f.seen, "token "+id+" "+r.PostForm.Get("grant_type")+" "+r.Header.Get("Content-Type"))
		code := r.PostForm.Get("code")
		switch {
		case id != DefaultUAAClientID || secret != clientSecret:
			w.WriteHeader(http.StatusUnauthorized)
		case f.uaaStatus != 0:
			w.WriteHeader(f.uaaStatus)
		case !f.codes[code] || r.PostForm.Get("grant_type") != "authorization_code":
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant"}`))
		default:
			delete(f.codes, code)
			claims, _ := json.Marshal(map[string]string{"user_name": "alice", "user_id": "u-1"})
			token := "e30." + base64.RawURLEncoding.EncodeToString(claims) + ".sig-" + code
			f.tokens[token] = true
			json.NewEncoder(w).Encode(map[string]string{"access_token": token, "token_type": "bearer"})
		}
	})
	mux.HandleFunc("GET /internal/apps/{guid}/ssh_access/{index}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.accesses++
		auth := r.Header.Get("Authorization")
		f.seen = append(f.seen, "access "+r.URL.Path+" "+strings.SplitN(auth, " ", 2)[0])
		token, _ := strings.CutPrefix(auth, "bearer ")
		status, ok := f.apps[r.PathValue("guid")]
		switch {
		case !f.tokens[token]:
			w.WriteHeader(http.StatusUnauthorized)
		case !ok:
			w.WriteHeader(http.StatusNotFound)
		case status != http.StatusOK:
			w.WriteHeader(status)
		default:
			w.Write([]byte(`{"process_guid":"web"}`))
		}
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// code issues a one-time code, as UAA's authorize endpoint would.
func (f *fakeCF) code(c string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes[c] = true
	return c
}

func (f *fakeCF) calls() (exchanges, accesses int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exchanges, f.accesses
}

// withCF turns the cf authenticator on against f.
func withCF(f *fakeCF) func(*Config) {
	return func(c *Config) {
		c.CF = &CFAuth{UAATokenURL: f.srv.URL + "/oauth/token", ClientID: DefaultUAAClientID, ClientSecret: clientSecret, CCURL: f.srv.URL + "/"}
	}
}

func run(t *testing.T, c *ssh.Client, command string) string {
	t.Helper()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out, err := sess.Output(command)
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return string(out)
}

// Both authenticators at once: a cf user with a code and a diego user with the password
// reach the same instance; the code is good once; the session's audit line says who, what
// and how much.
func TestCFLoginBesideDiego(t *testing.T) {
	cf := newFakeCF(t)
	cf.apps["app-1"] = http.StatusOK
	core, logs := observer.New(zapcore.InfoLevel)
	s := startStack(t, goodRoute, withCF(cf), func(c *Config) { c.Log = zap.New(core) })

	c, banner, err := s.dial("cf:app-1/0", cf.code("code-1"))
	if err != nil {
		t.Fatalf("cf login: %v (banner %q)", err, banner)
	}
	if out := run(t, c, "echo index=$CF_INSTANCE_INDEX"); out != "index=0\n" {
		t.Fatalf("through the cf login: %q", out)
	}
	c.Close()
	cf.mu.Lock()
	seen := strings.Join(cf.seen, "\n")
	cf.mu.Unlock()
	if want := "token ssh-proxy authorization_code application/x-www-form-urlencoded\naccess /internal/apps/app-1/ssh_access/0 bearer"; seen != want {
		t.Errorf("the calls:\n%s\nwant:\n%s", seen, want)
	}
	if _, banner, err := s.dial("cf:app-1/0", "code-1"); err == nil || !strings.Contains(banner, "the one-time code is not valid") {
		t.Errorf("the code again: %v, banner %q", err, banner)
	}
	d, _, err := s.dial("diego:web/0", password)
	if err != nil {
		t.Fatalf("diego login beside cf: %v", err)
	}
	run(t, d, "true")
	d.Close()

	var line map[string]any
	waitFor(t, "the cf session's audit line", func() bool {
		for _, e := range logs.FilterMessage("ssh session").All() {
			if m := e.ContextMap(); m["user"] == "cf:app-1/0" {
				line = m
				return true
			}
		}
		return false
	})
	for k, want := range map[string]any{"audit": true, "app_guid": "app-1", "principal": "alice", "process_guid": "web",
		"index": int32(0), "instance_guid": "i0", "definition_id": "v2", "ended": "client closed"} {
		if line[k] != want {
			t.Errorf("audit %s = %v, want %v (line %v)", k, line[k], want, line)
		}
	}
	if line["bytes_from_instance"] != int64(len("index=0\n")) || line["bytes_to_instance"] != int64(0) {
		t.Errorf("audit bytes: %v to, %v from", line["bytes_to_instance"], line["bytes_from_instance"])
	}
	if _, ok := line["start"].(time.Time); !ok {
		t.Errorf("audit start %v", line["start"])
	}
}

// waitFor waits for a condition another goroutine makes true (no timing is asserted: the
// bound only keeps a broken test from hanging).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("no %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Refusals say why; a user name of no form burns no code and asks nobody; a bad code is
// refused before Cloud Controller is asked anything.
func TestCFRefusalsSayWhy(t *testing.T) {
	cf := newFakeCF(t)
	cf.apps["app-1"] = http.StatusOK
	cf.apps["secret-app"] = http.StatusForbidden
	cf.apps["no-ssh"] = http.StatusBadRequest
	s := startStack(t, goodRoute, withCF(cf), func(c *Config) { c.MaxFailedLogins = 100 })
	for _, tc := range []struct {
		user, code, want    string
		exchanges, accesses int
	}{
		{"cf:app-1", cf.code("c1"), "has no /<index> after the app guid", 0, 0},
		{"cf:app-1/0", "not-issued", "the one-time code is not valid", 1, 0},
		{"cf:nope/0", "not-issued", "the one-time code is not valid", 1, 0},
		{"cf:nope/0", cf.code("c2"), `app "nope" not found`, 1, 1},
		{"cf:secret-app/0", cf.code("c3"), `you may not ssh into app "secret-app"`, 1, 1},
		{"cf:no-ssh/0", cf.code("c4"), `ssh is not enabled for app "no-ssh"`, 1, 1},
		{"cf:app-1/3", cf.code("c5"), `index 3 is out of range: LRP "web" has 3 instance(s)`, 1, 1},
		{"root", "c1", "is not of the form diego:<process_guid>/<index> or cf:<app_guid>/<index>", 0, 0},
	} {
		e0, a0 := cf.calls()
		c, banner, err := s.dial(tc.user, tc.code)
		if err == nil {
			c.Close()
			t.Fatalf("%s logged in", tc.user)
		}
		if !strings.Contains(banner, tc.want) {
			t.Errorf("%s: banner %q, want %q", tc.user, banner, tc.want)
		}
		if e, a := cf.calls(); e-e0 != tc.exchanges || a-a0 != tc.accesses {
			t.Errorf("%s: %d exchanges and %d access checks, want %d and %d", tc.user, e-e0, a-a0, tc.exchanges, tc.accesses)
		}
	}
	// The code c1 the malformed user did not spend still logs in.
	c, _, err := s.dial("cf:app-1/0", "c1")
	if err != nil {
		t.Fatalf("the unspent code: %v", err)
	}
	c.Close()
}

// A proxy with one authenticator says which users it takes; UAA's trouble is an internal
// error (the log has it), not the user's failed login.
func TestCFAuthenticatorTrouble(t *testing.T) {
	cf := newFakeCF(t)
	diegoOnly := startStack(t, goodRoute)
	if _, banner, _ := diegoOnly.dial("cf:app-1/0", "x"); !strings.Contains(banner, "this proxy does not log in cf users; log in as diego:<process_guid>/<index>") {
		t.Errorf("cf user at a diego-only proxy: %q", banner)
	}
	cfOnly := startStack(t, goodRoute, withCF(cf), func(c *Config) { c.Password = nil })
	if _, banner, _ := cfOnly.dial("diego:web/0", password); !strings.Contains(banner, "this proxy does not log in diego users; log in as cf:<app_guid>/<index>") {
		t.Errorf("diego user at a cf-only proxy: %q", banner)
	}
	cf.uaaStatus = http.StatusServiceUnavailable
	for range DefaultMaxFailedLogins + 1 {
		_, banner, _ := cfOnly.dial("cf:app-1/0", cf.code("c"))
		if !strings.Contains(banner, "internal error (request ") {
			t.Fatalf("UAA unavailable: %q", banner)
		}
	}
	if _, err := New(Config{HostKey: cfOnly.proxyKey, BBS: &fakeBBS{}}); err == nil || !strings.Contains(err.Error(), "no authenticator") {
		t.Errorf("no authenticator: %v", err)
	}
	if _, err := New(Config{HostKey: cfOnly.proxyKey, BBS: &fakeBBS{}, CF: &CFAuth{UAATokenURL: "uaa/oauth/token", CCURL: "http://cc", ClientID: "a", ClientSecret: "b"}}); err == nil || !strings.Contains(err.Error(), "is not an http(s) URL") {
		t.Errorf("a relative UAA URL: %v", err)
	}
}

// Five failed logins from one address make the proxy refuse it, whatever the user and the
// credentials, without spending a code, until the oldest failure is a minute old.
func TestFailedLoginsAreLimited(t *testing.T) {
	cf := newFakeCF(t)
	cf.apps["app-1"] = http.StatusOK
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := startStack(t, goodRoute, withCF(cf), func(c *Config) { c.Now = clock })
	for i := range DefaultMaxFailedLogins {
		if _, banner, _ := s.dial("diego:other"+string(rune('a'+i))+"/0", "wrong"); !strings.Contains(banner, "permission denied") {
			t.Fatalf("failure %d: %q", i, banner)
		}
	}
	e0, _ := cf.calls()
	for _, try := range []struct{ user, pw string }{{"diego:web/0", password}, {"cf:app-1/0", cf.code("good")}} {
		_, banner, err := s.dial(try.user, try.pw)
		if err == nil || !strings.Contains(banner, "too many failed logins from 127.0.0.1: try again in 1m0s") {
			t.Fatalf("%s while limited: %v, banner %q", try.user, err, banner)
		}
	}
	if e, _ := cf.calls(); e != e0 {
		t.Fatal("a limited login's code was exchanged")
	}
	mu.Lock()
	now = now.Add(DefaultFailedLoginsWindow)
	mu.Unlock()
	c, _, err := s.dial("cf:app-1/0", "good")
	if err != nil {
		t.Fatalf("after a minute, with the code not spent: %v", err)
	}
	c.Close()
}
