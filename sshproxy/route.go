package sshproxy

import (
	"bytes"
	"encoding/json"
	"errors"

	"golang.org/x/crypto/ssh"
)

// RouteName is the key of an LRP's routes that makes it reachable by ssh.
const RouteName = "diego-ssh"

// Route is an LRP's diego-ssh route (diego-ssh's routes.SSHRoute): where the daemon in each
// instance listens, the fingerprint of its host key, and how the proxy authenticates to it.
type Route struct {
	ContainerPort   uint32 `json:"container_port"`
	HostFingerprint string `json:"host_fingerprint,omitempty"`
	User            string `json:"user,omitempty"`
	Password        string `json:"password,omitempty"`
	PrivateKey      string `json:"private_key,omitempty"`
}

// ParseRoute reads and checks a diego-ssh route: a container port, a host fingerprint of
// a form diego-ssh accepts (so the proxy never connects to an unverified daemon), and a
// private key or a user and password to authenticate with. It returns the parsed key (nil
// without one).
func ParseRoute(raw []byte) (*Route, ssh.Signer, error) {
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, nil, refuse("its diego-ssh route is not a JSON object")
	}
	var r Route
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, nil, refuse("its diego-ssh route is not valid: %s", plainJSONError(err))
	}
	if r.ContainerPort == 0 || r.ContainerPort > 65535 {
		return nil, nil, refuse("its diego-ssh route's container_port must be between 1 and 65535")
	}
	if r.HostFingerprint == "" {
		return nil, nil, refuse("its diego-ssh route has no host_fingerprint: the instance's daemon cannot be verified")
	}
	if _, err := parseFingerprint(r.HostFingerprint); err != nil {
		return nil, nil, err
	}
	var signer ssh.Signer
	if r.PrivateKey != "" {
		var err error
		if signer, err = ssh.ParsePrivateKey([]byte(r.PrivateKey)); err != nil {
			// The key's parse error may quote it: say only that it is not a key.
			return nil, nil, refuse("its diego-ssh route's private_key is not a PEM private key without a passphrase")
		}
	} else if r.User == "" || r.Password == "" {
		return nil, nil, refuse("its diego-ssh route has neither a private_key nor a user and password")
	}
	return &r, signer, nil
}

// plainJSONError says what is wrong with JSON without echoing its content (a private key).
func plainJSONError(err error) string {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		return "field " + te.Field + " must be a " + te.Type.String()
	default:
		return "malformed JSON"
	}
}
