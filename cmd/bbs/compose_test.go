package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"go.yaml.in/yaml/v3"
)

// envOfCommand is every environment variable command reads: those its flags name in
// brackets in `bbs <command> -h`, and envWithoutFlag's.
func envOfCommand(t *testing.T, name string) map[string]bool {
	t.Helper()
	usage := commandUsage(t, name)
	env := map[string]bool{}
	for _, m := range regexp.MustCompile(`\[([A-Z][A-Z0-9_]+)\]`).FindAllStringSubmatch(usage, -1) {
		env[m[1]] = true
	}
	for _, v := range envWithoutFlag[name] {
		env[v] = true
	}
	return env
}

// TestEveryVariableReadIsDocumented keeps envWithoutFlag and the flags' [NAME]s complete:
// every variable name cmd/bbs and the preamble it runs (internal/boot) read (EnvOr, EnvInt,
// EnvDuration, SecretFromEnv, os.Getenv) is one some command declares.
func TestEveryVariableReadIsDocumented(t *testing.T) {
	declared := map[string]bool{}
	for name := range commands() {
		for v := range envOfCommand(t, name) {
			declared[v] = true
		}
	}
	files, _ := filepath.Glob("*.go")
	boot, _ := filepath.Glob("../../internal/boot/*.go")
	files = append(files, boot...)
	read := regexp.MustCompile(`(?:[eE]nvOr|[eE]nvInt|[eE]nvDuration|[sS]ecretFromEnv|os\.Getenv|os\.LookupEnv)\(\s*"([A-Z][A-Z0-9_]+)"`)
	constant := regexp.MustCompile(`(?m)^\s*[eE]nv\w+\s*=\s*"([A-Z][A-Z0-9_]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range append(read.FindAllStringSubmatch(string(src), -1), constant.FindAllStringSubmatch(string(src), -1)...) {
			if !declared[m[1]] {
				t.Errorf("%s reads %s, which no command declares (name it in its flag's usage as [%s], or in envWithoutFlag)", f, m[1], m[1])
			}
		}
	}
}

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
	} `yaml:"services"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose composeFile
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return compose
}

// TestComposeMatchesTheBinary checks docker-compose.yml against the binary it runs: every
// service of the bbs image runs a subcommand that exists, and sets only environment variables
// that subcommand reads; and the stack has the processes `make cluster` runs (two API
// replicas behind the front, two workers, three cells, the router).
func TestComposeMatchesTheBinary(t *testing.T) {
	compose := readCompose(t)
	byCommand := map[string][]string{}
	for name, svc := range compose.Services {
		if svc.Image != "bbs:local" {
			continue
		}
		if len(svc.Command) == 0 {
			t.Errorf("service %s: no command", name)
			continue
		}
		cmd := svc.Command[0]
		if _, ok := commands()[cmd]; !ok {
			t.Errorf("service %s runs `bbs %s`, which is no command", name, cmd)
			continue
		}
		byCommand[cmd] = append(byCommand[cmd], name)
		reads := envOfCommand(t, cmd)
		for v := range svc.Environment {
			if !reads[v] {
				t.Errorf("service %s sets %s, which `bbs %s` does not read", name, v, cmd)
			}
		}
	}
	for cmd, want := range map[string]int{"api": 2, "lb": 1, "worker": 2, "cell": 3, "router": 1} {
		if got := byCommand[cmd]; len(got) < want {
			t.Errorf("docker-compose.yml runs `bbs %s` as %v; make cluster runs %d", cmd, got, want)
		}
	}
	var names []string
	for cmd, svcs := range byCommand {
		sort.Strings(svcs)
		names = append(names, cmd+"="+strings.Join(svcs, ","))
	}
	slices.Sort(names)
	t.Logf("compose runs: %s", strings.Join(names, " "))
}

// TestComposeIsMutualTLS checks that the compose stack, like `make cluster`, has mutual TLS on
// every connection: each bbs service that can listen with it (its command reads
// BBS_TLS_CERT_FILE) sets the three files, each service that calls the API does so over https,
// each client of the Temporal frontend (bbs api and workers, the Temporal image's own CLI,
// the admin tools, the UI) presents a certificate, and the frontend requires one.
func TestComposeIsMutualTLS(t *testing.T) {
	compose := readCompose(t)
	for name, svc := range compose.Services {
		env := svc.Environment
		if svc.Image == "bbs:local" && len(svc.Command) > 0 && envOfCommand(t, svc.Command[0])["BBS_TLS_CERT_FILE"] {
			for _, v := range []string{"BBS_TLS_CERT_FILE", "BBS_TLS_KEY_FILE", "BBS_TLS_CLIENT_CA_FILE"} {
				if env[v] == "" {
					t.Errorf("service %s listens without %s", name, v)
				}
			}
		}
		if u, ok := env["BBS_API_URL"]; ok && !strings.HasPrefix(u, "https://") {
			t.Errorf("service %s calls the API at %s, not over https", name, u)
		}
		if _, ok := env["TEMPORAL_ADDRESS"]; ok {
			for _, v := range []string{"TEMPORAL_TLS_CA", "TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY"} {
				if env[v] == "" {
					t.Errorf("service %s calls the Temporal frontend without %s", name, v)
				}
			}
		}
	}
	temporal := compose.Services["temporal"].Environment
	if temporal["TEMPORAL_TLS_REQUIRE_CLIENT_AUTH"] != "true" || temporal["TEMPORAL_TLS_FRONTEND_CERT"] == "" || temporal["TEMPORAL_TLS_SERVER_CERT"] == "" {
		t.Errorf("the Temporal server does not require client certificates on its frontend and between its services: %v", temporal)
	}
}

// TestComposeTemporalDynamicConfig checks that deploy/temporal-dynamicconfig.yaml, which the
// compose stack's Temporal server reads, says what every server we start is given
// (temporaldev.DynamicConfig: the dev servers and make cluster's).
func TestComposeTemporalDynamicConfig(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/temporal-dynamicconfig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file map[string][]struct {
		Value any `yaml:"value"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, kv := range temporaldev.DynamicConfig {
		k, v, _ := strings.Cut(kv, "=")
		want[k] = v
	}
	for k, v := range want {
		if len(file[k]) != 1 || fmt.Sprint(file[k][0].Value) != v {
			t.Errorf("deploy/temporal-dynamicconfig.yaml: %s = %v, want %s", k, file[k], v)
		}
	}
	for k := range file {
		if _, ok := want[k]; !ok {
			t.Errorf("deploy/temporal-dynamicconfig.yaml sets %s, which temporaldev.DynamicConfig does not", k)
		}
	}
}

// TestComposeSearchAttributes checks that the compose stack's temporal-admin-tools registers
// every search attribute our workflows set (temporaldev.SearchAttributes, which the dev
// servers and make cluster's get), as Keyword, the one type it creates.
func TestComposeSearchAttributes(t *testing.T) {
	compose := readCompose(t)
	svc, ok := compose.Services["temporal-admin-tools"]
	if !ok || len(svc.Command) == 0 {
		t.Fatal("docker-compose.yml has no temporal-admin-tools command")
	}
	m := regexp.MustCompile(`(?m)^\s*attrs="([^"]*)"`).FindStringSubmatch(svc.Command[0])
	if m == nil {
		t.Fatalf("temporal-admin-tools sets no attrs=\"...\":\n%s", svc.Command[0])
	}
	got := strings.Fields(m[1])
	slices.Sort(got)
	var want []string
	for name, kind := range temporaldev.SearchAttributes {
		if kind != "Keyword" {
			t.Errorf("search attribute %s is a %s: temporal-admin-tools creates only Keyword ones", name, kind)
		}
		want = append(want, name)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("temporal-admin-tools registers %v, want temporaldev.SearchAttributes %v", got, want)
	}
}
