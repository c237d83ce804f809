package sshproxy

import (
	"strconv"
	"strings"

	"github.com/updatable-lrps/bbs/model"
)

// userPrefix names the diego authenticator's users: diego:<process_guid>/<index>.
const userPrefix = "diego:"

// ParseUser reads a user name of the diego authenticator, diego:<process_guid>/<index>. It
// is stricter than diego-ssh's unanchored pattern: nothing may come before or after, the guid
// follows the API's rules and the index is a decimal within an LRP's instance limit.
func ParseUser(user string) (processGUID string, index int32, err error) {
	rest, ok := strings.CutPrefix(user, userPrefix)
	if !ok {
		return "", 0, refuse("user %s is not of the form diego:<process_guid>/<index>", quote(user))
	}
	guid, idx, ok := strings.Cut(rest, "/")
	if !ok {
		return "", 0, refuse("user %s has no /<index> after the process guid", quote(user))
	}
	if model.ValidateGUID("process guid", guid) != nil {
		return "", 0, refuse("user %s: the process guid must be 1-%d letters, digits, '_' or '-'", quote(user), model.MaxGUIDLength)
	}
	if idx == "" || len(idx) > 5 || strings.Trim(idx, "0123456789") != "" {
		return "", 0, refuse("user %s: the index must be a number from 0 to %d", quote(user), model.MaxInstances-1)
	}
	n, _ := strconv.Atoi(idx) // at most 5 digits: cannot fail
	if n >= model.MaxInstances {
		return "", 0, refuse("user %s: the index must be a number from 0 to %d", quote(user), model.MaxInstances-1)
	}
	return guid, int32(n), nil
}

// quote shows untrusted input in a message: quoted, and cut when long.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strconv.Quote(s)
}
