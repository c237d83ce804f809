package temporaldev

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ErrNoServerBin says that no build of the real Temporal server (tools/temporal-server, which
// `make cluster` runs) was found.
var ErrNoServerBin = errors.New("no Temporal server binary: TEMPORAL_SERVER_BIN is unset, there is no " +
	"bin/temporal-server in this directory or above it, and none on PATH (`make bin/temporal-server` " +
	"builds the pinned go.temporal.io/server from tools/temporal-server; `make cluster` and `make test` do it for you)")

// FindServerBin returns the real Temporal server binary: $TEMPORAL_SERVER_BIN when set (it
// must exist), else bin/temporal-server in the working directory or the nearest parent that
// has one, else temporal-server on PATH.
func FindServerBin() (string, error) {
	if p := os.Getenv("TEMPORAL_SERVER_BIN"); p != "" {
		if !isFile(p) {
			return "", fmt.Errorf("TEMPORAL_SERVER_BIN=%s is not a file", p)
		}
		return filepath.Abs(p)
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if p := filepath.Join(dir, "bin", "temporal-server"); isFile(p) {
				return p, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if p, err := exec.LookPath("temporal-server"); err == nil {
		return p, nil
	}
	return "", ErrNoServerBin
}
