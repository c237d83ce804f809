package boot

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Environment variables that carry the ssh key material and password (each also as
// NAME_FILE naming a file that holds it): never flags, which `ps` shows. `bbs sshd` and
// `bbs ssh-proxy` read them; the dev stack writes the first two into its demo LRP.
const (
	EnvSSHDHostKey       = "SSHD_HOST_KEY"
	EnvSSHDAuthorizedKey = "SSHD_AUTHORIZED_KEY"
	EnvProxyHostKey      = "BBS_SSH_PROXY_HOST_KEY"
	EnvProxyPassword     = "BBS_SSH_PROXY_PASSWORD"
	// EnvProxyUAAClientSecret is the secret of the proxy's UAA client (the cf authenticator).
	EnvProxyUAAClientSecret = "BBS_SSH_PROXY_UAA_CLIENT_SECRET"
)

// EnvOr returns the environment variable name, or def when it is unset or empty: a flag's
// default comes from the variable its usage names in brackets.
func EnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// EnvInt parses the environment variable name as an integer, or returns def.
func EnvInt(name string, def int) int {
	var v int
	if _, err := fmt.Sscanf(os.Getenv(name), "%d", &v); err == nil {
		return v
	}
	return def
}

// EnvDuration parses the environment variable name as a positive duration, or returns def.
func EnvDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

// SecretFromEnv reads a secret from $NAME or from the file named by $NAME_FILE, never from a
// flag, which `ps` would show. It returns "" when neither is set.
func SecretFromEnv(name string) (string, error) {
	if v := os.Getenv(name); v != "" {
		return v, nil
	}
	if path := os.Getenv(name + "_FILE"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("read %s_FILE: %w", name, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", nil
}

// RequireDatabaseURL is DATABASE_URL (or the content of DATABASE_URL_FILE), an error when
// neither is set.
func RequireDatabaseURL() (string, error) {
	url, err := SecretFromEnv("DATABASE_URL")
	if err != nil {
		return "", err
	}
	if url == "" {
		return "", errors.New("DATABASE_URL (or DATABASE_URL_FILE) is not set")
	}
	return url, nil
}
