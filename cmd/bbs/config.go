package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"go.uber.org/zap"
)

// envOr returns the environment variable name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// secretFromEnv reads a secret from $NAME or from the file named by $NAME_FILE, never from a
// flag, which `ps` would show.
func secretFromEnv(name string) (string, error) {
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

// openStoreFromEnv connects to the database named by DATABASE_URL (or DATABASE_URL_FILE).
func openStoreFromEnv(ctx context.Context, log *zap.Logger) (*db.Store, error) {
	url, err := requireDatabaseURL()
	if err != nil {
		return nil, err
	}
	return openStore(ctx, url, log)
}

func requireDatabaseURL() (string, error) {
	url, err := secretFromEnv("DATABASE_URL")
	if err != nil {
		return "", err
	}
	if url == "" {
		return "", errors.New("DATABASE_URL (or DATABASE_URL_FILE) is not set")
	}
	return url, nil
}

// envDuration parses the environment variable name as a duration, or returns def.
func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

// logLevelFlag registers the --log-level flag every command has.
func logLevelFlag(fs *flag.FlagSet) *string {
	return fs.String("log-level", envOr("BBS_LOG_LEVEL", "info"), "debug, info, warn or error [BBS_LOG_LEVEL]")
}
