package pgcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// serverBinaries are the programs a BinDir must hold.
var serverBinaries = []string{"initdb", "pg_ctl", "postgres"}

// checkBinDir reports which server binary, if any, dir lacks.
func checkBinDir(dir string) error {
	for _, name := range serverBinaries {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.IsDir() || info.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("no executable %s in %s (need %s)", name, dir, strings.Join(serverBinaries, ", "))
		}
	}
	return nil
}

// FindBinDir locates the PostgreSQL server binaries. It tries, in order:
// $PG_BINDIR; the directory of initdb on PATH; `pg_config --bindir`; the
// highest version among /usr/lib/postgresql/*/bin (Debian and Ubuntu keep
// them off PATH there); and /usr/local/pgsql/bin (source builds). A
// directory counts only if it holds initdb, pg_ctl and postgres.
func FindBinDir() (string, error) {
	if dir := os.Getenv("PG_BINDIR"); dir != "" {
		// An explicit choice that does not work is an error, not a hint to
		// silently use some other installation.
		if err := checkBinDir(dir); err != nil {
			return "", fmt.Errorf("pgcluster: PG_BINDIR: %w", err)
		}
		return dir, nil
	}
	tried := []string{"$PG_BINDIR (unset)"}
	var candidates []string
	if p, err := exec.LookPath("initdb"); err == nil {
		// Prefer where a symlinked initdb really lives, which holds the full,
		// version-matched tool set; Debian's pg_wrapper links resolve to a
		// directory without postgres and fail the check, so also keep the
		// directory on PATH itself.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			candidates = append(candidates, filepath.Dir(real))
		}
		candidates = append(candidates, filepath.Dir(p))
	} else {
		tried = append(tried, "initdb on PATH (not found)")
	}
	if p, err := exec.LookPath("pg_config"); err == nil {
		if out, err := exec.Command(p, "--bindir").Output(); err == nil {
			candidates = append(candidates, strings.TrimSpace(string(out)))
		}
	} else {
		tried = append(tried, "pg_config --bindir (pg_config not found)")
	}
	candidates = append(candidates, versionedBinDirs()...)
	candidates = append(candidates, "/usr/local/pgsql/bin")
	for _, dir := range candidates {
		if checkBinDir(dir) == nil {
			return dir, nil
		}
		tried = append(tried, dir)
	}
	return "", fmt.Errorf("pgcluster: PostgreSQL server binaries (initdb, pg_ctl, postgres) not found; tried %s and /usr/lib/postgresql/*/bin; install Debian's postgresql package (apt-get install postgresql) or set PG_BINDIR to the directory holding them", strings.Join(tried, ", "))
}

// versionedBinDirs lists /usr/lib/postgresql/<version>/bin, newest first,
// comparing versions numerically so that 10 beats 9.6.
func versionedBinDirs() []string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) []int {
		var v []int
		for _, f := range strings.Split(filepath.Base(filepath.Dir(dir)), ".") {
			n, _ := strconv.Atoi(f)
			v = append(v, n)
		}
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return slices.Compare(version(b), version(a)) })
	return dirs
}
