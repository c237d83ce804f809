package devstack

import (
	"testing"

	"github.com/updatable-lrps/bbs/internal/devcerts"
)

// The banner is what `make run` prints and what its users read to find the system (and
// scripts may grep): this is its exact text for a typical stack.
func TestBannerRender(t *testing.T) {
	certs := devcerts.In(".data/certs")
	b := banner{
		api:            "http://127.0.0.1:8889",
		protocol:       protocolLine("http://127.0.0.1:8890"),
		protocolTLS:    protocolTLSLine("https://127.0.0.1:8891", certs),
		temporalUIPort: 8233, temporal: "127.0.0.1:7233", temporalDB: ".data/temporal.db", temporalLog: ".data/temporal.log",
		worker: `task queue "bbs"`, router: "127.0.0.1:8080", routerAdmin: "127.0.0.1:8081",
		ssh:      sshLine("127.0.0.1:2222", ".data/ssh", ".data"),
		tps:      "reports crashes to a stand-in Cloud Controller that logs them to .data/cc.log (--tps-cc-url for a real one)",
		postgres: "postgres://postgres@127.0.0.1:54329/bbs?sslmode=disable", postgresNote: "(data in .data/postgres, log .data/postgres.log)",
		supervision: "PostgreSQL and the Temporal dev server are restarted if they die (the log says so)",
		cells:       []bannerCell{{"cell-1", "z1", "process", ".data/cell-1.log"}, {"cell-2", "z2", "process", ".data/cell-2.log"}},
	}
	want := `
BBS dev stack is up:
  API           http://127.0.0.1:8889        try: curl -s -XPOST http://127.0.0.1:8889/v1/ping
  Rollouts page http://127.0.0.1:8889/ui/  (live rollouts, the traffic split, canary analysis, reverts)
  BBS protocol  http://127.0.0.1:8890  (protobuf, for Diego and Cloud Foundry clients: cfdot, Cloud Controller, ...)
  BBS protocol  https://127.0.0.1:8891  (mutual TLS; certificates in .data/certs)
                cfdot: export BBS_URL=https://127.0.0.1:8891 CA_CERT_FILE=.data/certs/ca.crt CLIENT_CERT_FILE=.data/certs/client.crt CLIENT_KEY_FILE=.data/certs/client.key
  Temporal UI   http://localhost:8233
  Temporal      127.0.0.1:7233 (namespace default, state in .data/temporal.db, log .data/temporal.log)
  Worker        task queue "bbs"
  Router        http://127.0.0.1:8080 (apps by Host header; stats: http://127.0.0.1:8081/stats)
  SSH proxy     ssh -p 2222 diego:<process_guid>/<index>@127.0.0.1  (password in .data/ssh/proxy_password; an LRP with ssh: .data/ssh/demo-lrp.json)
                ssh -p 2222 cf:<app_guid>/<index>@127.0.0.1  (as cf ssh: the password is a one-time code from 'bin/bbs ssh-code'; the demo LRP's app guid is 6f1c6e7e-3a53-4c7e-9b8e-2d6f3f0c9a11)
  TPS watcher   reports crashes to a stand-in Cloud Controller that logs them to .data/cc.log (--tps-cc-url for a real one)
  PostgreSQL    postgres://postgres@127.0.0.1:54329/bbs?sslmode=disable (data in .data/postgres, log .data/postgres.log)
  Cell          cell-1 in zone z1 (process executor, log .data/cell-1.log)
  Cell          cell-2 in zone z2 (process executor, log .data/cell-2.log)
  Metrics       http://127.0.0.1:8889/metrics  (Prometheus: every part above but the cells, which serve none here; docs/METRICS.md)
  Supervision   PostgreSQL and the Temporal dev server are restarted if they die (the log says so)
Ctrl-C stops everything; the next 'make run' resumes with the data kept.

`
	if got := b.render(); got != want {
		t.Errorf("banner:\n%s\nwant:\n%s", got, want)
	}
}

func TestBannerLinesOfWhatIsNotServed(t *testing.T) {
	if got := protocolLine(""); got != "not served (--bbs-listen is empty)" {
		t.Errorf("protocolLine = %q", got)
	}
	if got := protocolTLSLine("", devcerts.Files{}); got != "not served over TLS (--bbs-tls-listen is empty)" {
		t.Errorf("protocolTLSLine = %q", got)
	}
}
