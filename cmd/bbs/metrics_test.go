package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// scrapeTargets reads a Prometheus configuration's static targets by job.
func scrapeTargets(t *testing.T, path string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string][]string{}
	for _, sc := range cfg.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			out[sc.JobName] = append(out[sc.JobName], st.Targets...)
		}
	}
	return out
}

// TestPrometheusScrapesEveryComposeService checks deploy/prometheus.yml against
// docker-compose.yml: every long-running bbs service serves /metrics (BBS_METRICS_LISTEN_ADDR)
// and is scraped there, under the job of its command, and nothing else is scraped.
func TestPrometheusScrapesEveryComposeService(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Restart     string            `yaml:"restart"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for name, svc := range compose.Services {
		if svc.Image != "bbs:local" || svc.Restart == "no" { // one-shots (migrate) serve nothing
			continue
		}
		addr := svc.Environment["BBS_METRICS_LISTEN_ADDR"]
		_, port, ok := strings.Cut(addr, ":")
		if !ok {
			t.Errorf("service %s serves no metrics (BBS_METRICS_LISTEN_ADDR %q)", name, addr)
			continue
		}
		want[svc.Command[0]] = append(want[svc.Command[0]], name+":"+port)
	}
	checkTargets(t, "deploy/prometheus.yml", scrapeTargets(t, "../../deploy/prometheus.yml"), want)
}

// TestPrometheusClusterTargetsAreTheClusterDefaults checks deploy/prometheus-cluster.yml
// against `bbs cluster`'s flags: the router's stats address, and the metrics addresses of
// the lb, the workers, the cells and the API replicas.
func TestPrometheusClusterTargetsAreTheClusterDefaults(t *testing.T) {
	def := flagDefaults(t, "cluster")
	num := func(name string) int {
		n, err := strconv.Atoi(def[name])
		if err != nil {
			t.Fatalf("--%s default %q: %v", name, def[name], err)
		}
		return n
	}
	at := func(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
	want := map[string][]string{"lb": {at(num("metrics-port-base"))}, "router": {def["router-admin-listen"]}}
	for i := 1; i <= num("api-replicas"); i++ {
		want["api"] = append(want["api"], at(num("metrics-port-base")+20+i))
	}
	for i := 1; i <= num("workers"); i++ {
		want["worker"] = append(want["worker"], at(num("metrics-port-base")+i))
	}
	for i := 1; i <= num("cells"); i++ {
		want["cell"] = append(want["cell"], at(num("metrics-port-base")+10+i))
	}
	checkTargets(t, "deploy/prometheus-cluster.yml", scrapeTargets(t, "../../deploy/prometheus-cluster.yml"), want)
}

func checkTargets(t *testing.T, file string, got, want map[string][]string) {
	t.Helper()
	for job, targets := range want {
		slices.Sort(targets)
		g := slices.Clone(got[job])
		slices.Sort(g)
		if !slices.Equal(g, targets) {
			t.Errorf("%s: job %s scrapes %v, want %v", file, job, g, targets)
		}
	}
	for job := range got {
		if _, ok := want[job]; !ok {
			t.Errorf("%s: job %s scrapes no bbs process", file, job)
		}
	}
}

// commandUsage is what `bbs <command> -h` prints.
func commandUsage(t *testing.T, name string) string {
	t.Helper()
	// The flag sets print their usage to os.Stderr as it is when they print.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	runErr := commands()[name](context.Background(), []string{"-h"})
	os.Stderr = stderr
	w.Close()
	usage, _ := io.ReadAll(r)
	if !errors.Is(runErr, flag.ErrHelp) {
		t.Fatalf("bbs %s -h: %v", name, runErr)
	}
	return string(usage)
}

// flagDefaults reads the defaults `bbs <command> -h` prints.
func flagDefaults(t *testing.T, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entry := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)[^\n]*\n((?:    \t[^\n]*\n?)+)`)
	dflt := regexp.MustCompile(`\(default "?([^")]*)"?\)\s*$`)
	for _, m := range entry.FindAllStringSubmatch(commandUsage(t, name), -1) {
		if d := dflt.FindStringSubmatch(m[2]); d != nil {
			out[m[1]] = d[1]
		}
	}
	return out
}
