package sshproxy

import (
	"strconv"
	"strings"

	"github.com/updatable-lrps/bbs/model"
)

// The user names of the two authenticators: diego:<process_guid>/<index> logs in with the
// proxy's shared password, cf:<app_guid>/<index> with a one-time code from UAA.
const (
	diegoPrefix = "diego:"
	cfPrefix    = "cf:"
)

// ParseUser reads a user name of the diego authenticator, diego:<process_guid>/<index>. It
// is stricter than diego-ssh's unanchored pattern: nothing may come before or after, the guid
// follows the API's rules and the index is a decimal within an LRP's instance limit.
func ParseUser(user string) (processGUID string, index int32, err error) {
	return parseUser(user, diegoPrefix, "process guid")
}

// ParseCFUser reads a user name of the cf authenticator, cf:<app_guid>/<index>, by the same
// rules as ParseUser. Cloud Controller's app guids are UUIDs; any guid the API accepts is
// taken, and none can carry a '/', '?' or '%' into the Cloud Controller URL it is put in.
func ParseCFUser(user string) (appGUID string, index int32, err error) {
	return parseUser(user, cfPrefix, "app guid")
}

func parseUser(user, prefix, guidName string) (string, int32, error) {
	rest, ok := strings.CutPrefix(user, prefix)
	if !ok {
		return "", 0, refuseLogin("user %s is not of the form %s<%s>/<index>", quote(user), prefix, strings.ReplaceAll(guidName, " ", "_"))
	}
	guid, idx, ok := strings.Cut(rest, "/")
	if !ok {
		return "", 0, refuseLogin("user %s has no /<index> after the %s", quote(user), guidName)
	}
	if model.ValidateGUID(guidName, guid) != nil {
		return "", 0, refuseLogin("user %s: the %s must be 1-%d letters, digits, '_' or '-'", quote(user), guidName, model.MaxGUIDLength)
	}
	if idx == "" || len(idx) > 5 || strings.Trim(idx, "0123456789") != "" {
		return "", 0, refuseLogin("user %s: the index must be a number from 0 to %d", quote(user), model.MaxInstances-1)
	}
	n, _ := strconv.Atoi(idx) // at most 5 digits: cannot fail
	if n >= model.MaxInstances {
		return "", 0, refuseLogin("user %s: the index must be a number from 0 to %d", quote(user), model.MaxInstances-1)
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
