package system

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/internal/temporalzap"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
)

// TemporalConfig says where the Temporal frontend is.
type TemporalConfig struct {
	Address   string
	Namespace string
	// TLS, when set, is used to reach the frontend.
	TLS *tls.Config
	// Gzip compresses the gRPC requests to the frontend (and so its answers), the SDK's
	// default. Off by default here: a rollout's messages are a few hundred bytes, and gzip cost
	// the worker and the Temporal server CPU on every call (4.5 % of the benchmark process's CPU
	// under a thousand rollouts) to save bandwidth a cluster's network does not lack.
	Gzip bool
}

func (t TemporalConfig) options(log *zap.Logger) client.Options {
	o := client.Options{
		HostPort:  t.Address,
		Namespace: t.Namespace,
		Logger:    temporalzap.New(log.Named("temporal")),
	}
	if t.TLS != nil {
		o.ConnectionOptions.TLS = t.TLS
	}
	o.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	if t.Gzip {
		o.ConnectionOptions.GrpcCompression = &client.GrpcCompressionGzip{}
	}
	return o
}

// dialPatience is how long DialTemporal keeps trying a server that answers but is not ready,
// when its caller gives no deadline.
const dialPatience = 30 * time.Second

// DialTemporal connects to Temporal now (a worker cannot do anything without it). A server
// just started opens its port before its frontend is healthy, and a dial then fails at once
// ("Frontend is not healthy yet"): it is tried again until ctx's deadline (dialPatience
// without one) before the error is returned.
func DialTemporal(ctx context.Context, t TemporalConfig, log *zap.Logger) (client.Client, error) {
	giveUp, ok := ctx.Deadline()
	if !ok {
		giveUp = time.Now().Add(dialPatience)
	}
	for {
		c, err := client.DialContext(ctx, t.options(log))
		if err == nil {
			return c, nil
		}
		if time.Now().After(giveUp) {
			return nil, fmt.Errorf("connect to Temporal at %s: %w", t.Address, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to Temporal at %s: %w", t.Address, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// LazyTemporal connects on first use, so that the API serves (and answers Unavailable for
// rollouts) while Temporal is away.
func LazyTemporal(t TemporalConfig, log *zap.Logger) (client.Client, error) {
	return client.NewLazyClient(t.options(log))
}
