package sshproxy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
)

// An authenticator turns a user name and a password into the instance the user may reach.
// The proxy picks one by the user name's prefix (form's text up to its colon).
type authenticator interface {
	// form is the user name it takes, e.g. diego:<process_guid>/<index>.
	form() string
	login(ctx context.Context, user string, password []byte) (*login, error)
}

// login is who logged in and what they reach.
type login struct {
	ProcessGUID string
	Index       int32
	// App is the app guid of a cf login (empty for diego).
	App string
	// Principal is the UAA user behind a cf login, when its token names one.
	Principal string
}

// diegoAuthenticator logs in whoever knows the proxy's shared password.
type diegoAuthenticator struct{ password [sha256.Size]byte }

func newDiegoAuthenticator(password []byte) *diegoAuthenticator {
	// Comparing digests keeps the comparison constant-time in the password's length too.
	return &diegoAuthenticator{password: sha256.Sum256(password)}
}

func (a *diegoAuthenticator) form() string { return diegoPrefix + "<process_guid>/<index>" }

// login checks the password first, so that nothing about the LRPs is told to whoever does
// not know it.
func (a *diegoAuthenticator) login(_ context.Context, user string, password []byte) (*login, error) {
	sum := sha256.Sum256(password)
	if subtle.ConstantTimeCompare(sum[:], a.password[:]) != 1 {
		return nil, errWrongPassword
	}
	guid, index, err := ParseUser(user)
	if err != nil {
		return nil, err
	}
	return &login{ProcessGUID: guid, Index: index}, nil
}
