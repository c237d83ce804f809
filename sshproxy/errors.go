package sshproxy

import (
	"errors"
	"fmt"
)

// Refusal is an error the ssh user is shown as it is (in the authentication banner): what
// is wrong with their request, in words that tell them what to do. Any other error is an
// internal one, which the user sees only as such while the proxy's log has the cause.
type Refusal struct {
	Message string
	// failedLogin marks a refusal of the user's credentials or of their right to the app
	// (a wrong password, a bad code, a user name of no form, Cloud Controller's no): what
	// the failed-login limit counts. A refusal after that (no RUNNING instance, an index out
	// of range) is no failed login: the user proved who they are.
	failedLogin bool
}

func (r *Refusal) Error() string { return r.Message }

func refuse(format string, args ...any) *Refusal {
	return &Refusal{Message: fmt.Sprintf(format, args...)}
}

// refuseLogin is refuse for a failed login.
func refuseLogin(format string, args ...any) *Refusal {
	return &Refusal{Message: fmt.Sprintf(format, args...), failedLogin: true}
}

// errWrongPassword is deliberately silent about which part was wrong.
var errWrongPassword = &Refusal{Message: "permission denied", failedLogin: true}

// isFailedLogin reports whether err is a refusal the failed-login limit counts.
func isFailedLogin(err error) bool {
	var r *Refusal
	return errors.As(err, &r) && r.failedLogin
}

// bannerFor is the one place that turns an error into what the ssh user reads.
func bannerFor(err error, requestID string) string {
	var r *Refusal
	if errors.As(err, &r) {
		return "bbs ssh-proxy: " + r.Message + "\r\n"
	}
	return "bbs ssh-proxy: internal error (request " + requestID + "), see the proxy's log\r\n"
}
