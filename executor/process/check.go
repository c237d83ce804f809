package process

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// monitorBound limits one run of a monitor action that does not set its own timeout, so a
// hung check cannot stall the health loop.
const monitorBound = 30 * time.Second

// defaultCheckTimeout is the connect or request timeout of a declarative check that names none.
const defaultCheckTimeout = time.Second

// checkTransport is shared by every instance; keep-alives are off because checks are rare
// and thousands of idle connections to instances would only hold their sockets open.
var checkTransport = &http.Transport{DisableKeepAlives: true, Proxy: nil}

// Check runs the health check once. A check definition with checks takes precedence over a
// monitor action, as in Diego when declarative health checks are enabled.
func (in *instance) Check(ctx context.Context) error {
	if in.isStopping() {
		return errStopped
	}
	def := in.spec.Definition
	if def.CheckDefinition != nil && len(def.CheckDefinition.Checks) > 0 {
		for _, c := range def.CheckDefinition.Checks {
			if err := in.check(ctx, c); err != nil {
				return err
			}
		}
		return nil
	}
	if def.Monitor == nil {
		return nil
	}
	mctx, cancel := ctx, context.CancelFunc(func() {})
	if def.Monitor.Timeout == nil {
		mctx, cancel = context.WithTimeout(ctx, monitorBound)
	}
	defer cancel()
	err := in.runAction(mctx, def.Monitor)
	if err != nil && ctx.Err() == nil && errors.Is(mctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("monitor did not exit within %s", monitorBound)
	}
	return err
}

// CheckReadiness runs the readiness checks once, all of which must pass.
func (in *instance) CheckReadiness(ctx context.Context) error {
	if in.isStopping() {
		return errStopped
	}
	def := in.spec.Definition
	if def.CheckDefinition == nil {
		return nil
	}
	for _, c := range def.CheckDefinition.ReadinessChecks {
		if err := in.check(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

func (in *instance) check(ctx context.Context, c model.Check) error {
	switch {
	case c.TCPCheck != nil:
		addr, err := in.hostAddr(c.TCPCheck.Port)
		if err != nil {
			return err
		}
		d := net.Dialer{Timeout: msOr(c.TCPCheck.ConnectTimeoutMs)}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("tcp_check port %d: %w", c.TCPCheck.Port, err)
		}
		conn.Close()
		return nil
	case c.HTTPCheck != nil:
		addr, err := in.hostAddr(c.HTTPCheck.Port)
		if err != nil {
			return err
		}
		path := c.HTTPCheck.Path
		if path == "" {
			path = "/"
		} else if path[0] != '/' {
			path = "/" + path
		}
		rctx, cancel := context.WithTimeout(ctx, msOr(c.HTTPCheck.RequestTimeoutMs))
		defer cancel()
		url := "http://" + addr + path
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("http_check port %d: %w", c.HTTPCheck.Port, err)
		}
		resp, err := (&http.Client{Transport: checkTransport}).Do(req)
		if err != nil {
			return fmt.Errorf("http_check port %d: %w", c.HTTPCheck.Port, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("http_check port %d: GET %s answered %s", c.HTTPCheck.Port, url, resp.Status)
		}
		return nil
	}
	return errors.New("check has neither tcp_check nor http_check")
}

// hostAddr finds where a container port is reachable on the host.
func (in *instance) hostAddr(containerPort uint32) (string, error) {
	host := in.spec.Address
	if host == "" {
		host = "127.0.0.1"
	}
	for _, p := range in.spec.Ports {
		if p.ContainerPort == containerPort {
			return net.JoinHostPort(host, strconv.FormatUint(uint64(p.HostPort), 10)), nil
		}
	}
	return "", fmt.Errorf("check port %d is not mapped: it is not one of the definition's ports", containerPort)
}

func msOr(ms int64) time.Duration {
	if ms <= 0 {
		return defaultCheckTimeout
	}
	return time.Duration(ms) * time.Millisecond
}
