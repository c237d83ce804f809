package workflows

import (
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/api/serviceerror"
)

// A start on a server without RolloutPhase is refused in the words of its visibility store;
// only that refusal starts again without it.
func TestUndefinedAttribute(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{serviceerror.NewInvalidArgument("Namespace default has no mapping defined for search attribute RolloutPhase"), true}, // SQL visibility
		{serviceerror.NewInvalidArgument("search attribute RolloutPhase is not defined"), true},                               // Elasticsearch
		{fmt.Errorf("start: %w", serviceerror.NewInvalidArgument("search attribute RolloutPhase is not defined")), true},
		{serviceerror.NewInvalidArgument("search attribute RolloutState is not defined"), false},
		{serviceerror.NewInvalidArgument("WorkflowId is not set"), false},
		{serviceerror.NewUnavailable("search attribute RolloutPhase is not defined"), false},
		{errors.New("search attribute RolloutPhase is not defined"), false},
		{nil, false},
	} {
		if got := undefinedAttribute(tc.err, SearchAttrRolloutPhase.GetName()); got != tc.want {
			t.Errorf("undefinedAttribute(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
