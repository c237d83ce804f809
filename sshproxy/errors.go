package sshproxy

import (
	"errors"
	"fmt"
)

// Refusal is an error the ssh user is shown as it is (in the authentication banner): what
// is wrong with their request, in words that tell them what to do. Any other error is an
// internal one, which the user sees only as such while the proxy's log has the cause.
type Refusal struct{ Message string }

func (r *Refusal) Error() string { return r.Message }

func refuse(format string, args ...any) *Refusal {
	return &Refusal{Message: fmt.Sprintf(format, args...)}
}

// errWrongPassword is deliberately silent about which part was wrong.
var errWrongPassword = &Refusal{Message: "permission denied"}

// bannerFor is the one place that turns an error into what the ssh user reads.
func bannerFor(err error, requestID string) string {
	var r *Refusal
	if errors.As(err, &r) {
		return "bbs ssh-proxy: " + r.Message + "\r\n"
	}
	return "bbs ssh-proxy: internal error (request " + requestID + "), see the proxy's log\r\n"
}
