package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/freeport"
	"github.com/updatable-lrps/bbs/internal/temporaltest"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"
)

// temporalBin is the temporal CLI `make run` would use; without one the test fails (skips in
// -short mode).
func temporalBin(t *testing.T) string { return temporaltest.Bin(t) }

// TestDevModeRunsTheWholeSystem is `make run` as a new user meets it: one command brings up a
// private PostgreSQL, the Temporal dev server with its UI, the API and the worker; Ctrl-C stops
// all of it; running it again resumes with the data kept.
func TestDevModeRunsTheWholeSystem(t *testing.T) {
	bin := temporalBin(t)
	dataDir := t.TempDir()
	apiPort, pgPort, tPort, uiPort, protocolPort, sshPort := freeport.Port(t), freeport.Port(t), freeport.Port(t), freeport.Port(t), freeport.Port(t), freeport.Port(t)
	args := []string{"dev", "--data-dir", dataDir, "--listen", fmt.Sprintf("127.0.0.1:%d", apiPort),
		"--bbs-listen", fmt.Sprintf("127.0.0.1:%d", protocolPort), "--bbs-tls-listen", fmt.Sprintf("127.0.0.1:%d", freeport.Port(t)),
		"--pg-port", fmt.Sprint(pgPort), "--temporal-bin", bin,
		"--temporal-port", fmt.Sprint(tPort), "--temporal-ui-port", fmt.Sprint(uiPort),
		"--router-listen", fmt.Sprintf("127.0.0.1:%d", freeport.Port(t)), "--router-admin-listen", fmt.Sprintf("127.0.0.1:%d", freeport.Port(t)),
		"--ssh-proxy-listen", fmt.Sprintf("127.0.0.1:%d", sshPort)}
	c := client{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", apiPort)}

	p := start(t, nil, args...)
	p.waitOutput(t, "Ctrl-C stops everything", 2*time.Minute)
	c.waitAvailable(p, 10*time.Second)
	out := p.out.String()
	for _, want := range []string{"BBS dev stack is up", fmt.Sprintf("http://127.0.0.1:%d", apiPort),
		fmt.Sprintf("http://localhost:%d", uiPort), fmt.Sprintf("127.0.0.1:%d", tPort),
		fmt.Sprintf("BBS protocol  http://127.0.0.1:%d", protocolPort),
		fmt.Sprintf("SSH proxy     ssh -p %d diego:<process_guid>/<index>@127.0.0.1  (password in %s", sshPort, filepath.Join(dataDir, "ssh", "proxy_password")),
		"TPS watcher   reports crashes to a stand-in Cloud Controller"} {
		if !strings.Contains(out, want) {
			t.Errorf("the banner does not say %q:\n%s", want, out)
		}
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", uiPort))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("Temporal Web UI: %v %v", resp, err)
	}
	resp.Body.Close()
	waitForPoller(t, fmt.Sprintf("127.0.0.1:%d", tPort), nil)

	c.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": desiredLRP("kept", 2)}, nil)
	p.stop(t, os.Interrupt, time.Minute)
	for _, port := range []int{apiPort, pgPort, tPort, uiPort} {
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			conn.Close()
			t.Errorf("port %d still answers after Ctrl-C", port)
		}
	}
	for _, f := range []string{"postgres/PG_VERSION", "temporal.db"} {
		if _, err := os.Stat(filepath.Join(dataDir, f)); err != nil {
			t.Errorf("state file %s: %v", f, err)
		}
	}

	p = start(t, nil, args...)
	p.waitOutput(t, "Ctrl-C stops everything", 2*time.Minute)
	c.waitAvailable(p, 10*time.Second)
	var got struct {
		DesiredLRP obj `json:"desired_lrp"`
	}
	c.mustPost("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "kept"}, &got)
	if got.DesiredLRP["instances"] != 2.0 {
		t.Fatalf("after restart: %v", got.DesiredLRP)
	}
	p.stop(t, os.Interrupt, time.Minute)
}

// waitForPoller checks that the worker polls the bbs task queue of the Temporal frontend at
// address, reached with tlsConfig when it is set.
func waitForPoller(t *testing.T, address string, tlsConfig *tls.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tc, err := temporalclient.DialContext(ctx, temporalclient.Options{HostPort: address,
		ConnectionOptions: temporalclient.ConnectionOptions{TLS: tlsConfig}})
	if err != nil {
		t.Fatalf("dial Temporal: %v", err)
	}
	defer tc.Close()
	for {
		resp, err := tc.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
			Namespace:     "default",
			TaskQueue:     &taskqueue.TaskQueue{Name: "bbs", Kind: enums.TASK_QUEUE_KIND_NORMAL},
			TaskQueueType: enums.TASK_QUEUE_TYPE_WORKFLOW,
		})
		if err == nil && len(resp.Pollers) > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no worker polls the bbs task queue: %v", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
