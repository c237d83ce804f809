package clusterstack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"go.yaml.in/yaml/v3"
)

// The server's configuration is YAML that puts its four services on the ports of the
// layout, on 127.0.0.1, its stores in the cluster's PostgreSQL, mutual TLS everywhere.
func TestServerConfig(t *testing.T) {
	dir := t.TempDir()
	certs := clusterCerts{dir: "/certs"}
	p := newTemporalPorts(7233, 17000)
	if err := writeTemporalConfig(dir, 54339, p, 4, certs.temporalServerTLS()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Persistence struct {
			NumHistoryShards int `yaml:"numHistoryShards"`
			Datastores       map[string]struct {
				SQL struct {
					DatabaseName string `yaml:"databaseName"`
					ConnectAddr  string `yaml:"connectAddr"`
				} `yaml:"sql"`
			} `yaml:"datastores"`
		} `yaml:"persistence"`
		Global struct {
			TLS map[string]struct {
				Server struct {
					CertFile          string   `yaml:"certFile"`
					RequireClientAuth bool     `yaml:"requireClientAuth"`
					ClientCAFiles     []string `yaml:"clientCaFiles"`
				} `yaml:"server"`
			} `yaml:"tls"`
		} `yaml:"global"`
		Services map[string]struct {
			RPC struct {
				GRPCPort       int    `yaml:"grpcPort"`
				MembershipPort int    `yaml:"membershipPort"`
				HTTPPort       int    `yaml:"httpPort"`
				BindOnIP       string `yaml:"bindOnIP"`
			} `yaml:"rpc"`
		} `yaml:"services"`
		DynamicConfigClient struct {
			Filepath string `yaml:"filepath"`
		} `yaml:"dynamicConfigClient"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("cluster.yaml: %v\n%s", err, raw)
	}
	if cfg.Persistence.NumHistoryShards != 4 {
		t.Errorf("shards %d", cfg.Persistence.NumHistoryShards)
	}
	for store, db := range map[string]string{"default": "temporal", "visibility": "temporal_visibility"} {
		if got := cfg.Persistence.Datastores[store].SQL; got.DatabaseName != db || got.ConnectAddr != "127.0.0.1:54339" {
			t.Errorf("store %s: %+v", store, got)
		}
	}
	want := map[string][3]int{"frontend": {7233, 17060, 17050}, "history": {17051, 17061, 0}, "matching": {17052, 17062, 0}, "worker": {17053, 17063, 0}}
	for name, ports := range want {
		rpc := cfg.Services[name].RPC
		if got := [3]int{rpc.GRPCPort, rpc.MembershipPort, rpc.HTTPPort}; got != ports || rpc.BindOnIP != "127.0.0.1" {
			t.Errorf("service %s: %+v, want ports %v on 127.0.0.1", name, rpc, ports)
		}
	}
	for _, section := range []string{"internode", "frontend"} {
		s := cfg.Global.TLS[section].Server
		if !s.RequireClientAuth || s.CertFile != "/certs/server.crt" || len(s.ClientCAFiles) != 1 || s.ClientCAFiles[0] != "/certs/ca.crt" {
			t.Errorf("global.tls.%s.server: %+v", section, s)
		}
	}
	if cfg.DynamicConfigClient.Filepath != filepath.Join(dir, "dynamicconfig.yaml") {
		t.Errorf("dynamic config read from %s", cfg.DynamicConfigClient.Filepath)
	}
}

// The dynamic config says what every Temporal server we start is given.
func TestDynamicConfig(t *testing.T) {
	var file map[string][]struct {
		Value       any            `yaml:"value"`
		Constraints map[string]any `yaml:"constraints"`
	}
	if err := yaml.Unmarshal([]byte(dynamicConfigYAML()), &file); err != nil {
		t.Fatal(err)
	}
	if len(file) != len(temporaldev.DynamicConfig) {
		t.Errorf("%d settings, want %d", len(file), len(temporaldev.DynamicConfig))
	}
	for _, kv := range temporaldev.DynamicConfig {
		k, v, _ := strings.Cut(kv, "=")
		if len(file[k]) != 1 || fmt.Sprint(file[k][0].Value) != v {
			t.Errorf("%s = %v, want %s", k, file[k], v)
		}
	}
}
