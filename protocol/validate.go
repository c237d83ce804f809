package protocol

import (
	"strings"

	"github.com/updatable-lrps/bbs/model"
)

// invalidFields is BBS's answer to a request that fails its validation: InvalidRequest whose
// message lists each bad field as "Invalid field: <name>", joined with ", " (BBS's
// ValidationError of ErrInvalidField). Clients and operators read these texts, so the
// protocol's validation speaks them rather than our JSON API's wording. nil when no field is
// bad.
func invalidFields(fields ...string) error {
	if len(fields) == 0 {
		return nil
	}
	msgs := make([]string, len(fields))
	for i, f := range fields {
		msgs[i] = "Invalid field: " + f
	}
	return model.Errorf(model.ErrInvalidRequest, "%s", strings.Join(msgs, ", "))
}
