package sshproxy

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"strings"

	"golang.org/x/crypto/ssh"
)

// fingerprint is an expected host key fingerprint in one of the forms diego-ssh accepts:
// MD5 or SHA-1 as colon-separated hex (47 and 59 characters), or SHA-256 as base64 (43
// characters unpadded; Ruby's sshkey pads it to 44; OpenSSH prefixes "SHA256:").
type fingerprint struct {
	newHash func() hash.Hash
	sum     []byte
}

func parseFingerprint(s string) (fingerprint, error) {
	bad := refuse("its diego-ssh route's host_fingerprint %s is not an MD5 or SHA-1 hex (aa:bb:...) or a SHA-256 base64 fingerprint", quote(s))
	switch {
	case len(s) == 47 || len(s) == 59:
		sum, err := hex.DecodeString(strings.ReplaceAll(s, ":", ""))
		if err != nil || len(sum)*3-1 != len(s) || !colonSeparated(s) {
			return fingerprint{}, bad
		}
		if len(sum) == md5.Size {
			return fingerprint{md5.New, sum}, nil
		}
		return fingerprint{sha1.New, sum}, nil
	default:
		b64 := strings.TrimRight(strings.TrimPrefix(s, "SHA256:"), "=")
		sum, err := base64.RawStdEncoding.DecodeString(b64)
		if err != nil || len(sum) != sha256.Size {
			return fingerprint{}, bad
		}
		return fingerprint{sha256.New, sum}, nil
	}
}

func colonSeparated(s string) bool {
	for i := 2; i < len(s); i += 3 {
		if s[i] != ':' {
			return false
		}
	}
	return true
}

var errFingerprintMismatch = errors.New("host key fingerprint mismatch")

// check verifies a host key against the fingerprint.
func (f fingerprint) check(key ssh.PublicKey) error {
	h := f.newHash()
	h.Write(key.Marshal())
	if !bytes.Equal(h.Sum(nil), f.sum) { // a fingerprint is no secret
		return errFingerprintMismatch
	}
	return nil
}

// Fingerprint is a host key's fingerprint as a diego-ssh route carries it (SHA-256, base64,
// unpadded).
func Fingerprint(key ssh.PublicKey) string {
	return strings.TrimPrefix(ssh.FingerprintSHA256(key), "SHA256:")
}
