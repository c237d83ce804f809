package clusterstack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/durationpb"
)

// setUpNamespace registers the namespace (unless it exists) and our search attributes
// (those missing), then waits until the frontend serves the namespace: a namespace just
// registered reaches the frontend's cache only at its next refresh.
func setUpNamespace(ctx context.Context, tcfg system.TemporalConfig, retention time.Duration, log *zap.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// The frontend listens before it serves: DialTemporal tries again, within ctx, until its
	// membership has formed.
	c, err := system.DialTemporal(ctx, tcfg, log)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: tcfg.Namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(retention)})
	var exists *serviceerror.NamespaceAlreadyExists
	switch {
	case err == nil:
		log.Info("registered the Temporal namespace", zap.String("namespace", tcfg.Namespace))
	case errors.As(err, &exists):
	default:
		return fmt.Errorf("register namespace %s: %w", tcfg.Namespace, err)
	}
	for {
		err = addSearchAttributes(ctx, c, tcfg.Namespace, log)
		if err == nil {
			_, err = c.WorkflowService().ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: tcfg.Namespace, PageSize: 1, Query: `ProcessGuid = "-"`})
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s not ready: %w", tcfg.Namespace, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// addSearchAttributes adds those of temporaldev.SearchAttributes the namespace lacks; having
// added some, it returns an error, so that the caller looks again once they are in effect.
func addSearchAttributes(ctx context.Context, c client.Client, namespace string, log *zap.Logger) error {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return err
	}
	missing := map[string]enums.IndexedValueType{}
	for name, kind := range temporaldev.SearchAttributes {
		if _, ok := have.CustomAttributes[name]; ok {
			continue
		}
		v, err := enums.IndexedValueTypeFromString(kind)
		if err != nil {
			return fmt.Errorf("search attribute %s: %w", name, err)
		}
		missing[name] = v
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing}); err != nil {
		return fmt.Errorf("add search attributes: %w", err)
	}
	log.Info("added search attributes", zap.Int("count", len(missing)))
	return errors.New("search attributes just added") // checked again on the next pass
}
