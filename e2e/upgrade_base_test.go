package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the repository the tests run in.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("the upgrade test builds its base from this repository's history, but git cannot find it: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// upgradeBase is the revision the upgrade test starts from: BBS_UPGRADE_BASE (`make
// upgrade-test BASE=<revision>`), else the Makefile's UPGRADE_BASE, the one place it is named.
func upgradeBase(t *testing.T, root string) string {
	t.Helper()
	if rev := os.Getenv("BBS_UPGRADE_BASE"); rev != "" {
		return rev
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^UPGRADE_BASE\s*\?=\s*(\S+)`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile names no UPGRADE_BASE")
	}
	return string(m[1])
}

// git runs git in root and returns its output.
func git(t *testing.T, root string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// baseBinary is rev's bbs, built from the repository's own history in a git worktree of its
// own (nothing fetched but Go modules) and kept in bin/upgrade/<commit>/ (git-ignored), so
// that the next run of the same base starts at once.
func baseBinary(t *testing.T, root, rev string) (bin, commit string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", rev+"^{commit}").Output()
	if err != nil {
		why := "it is not a commit of this repository"
		if git(t, root, "rev-parse", "--is-shallow-repository") == "true" {
			why = "this clone is shallow and lacks it (git fetch --unshallow)"
		}
		t.Fatalf("the upgrade test's BASE %q: %s; BASE is a commit of main's history (UPGRADE_BASE in the Makefile, or BBS_UPGRADE_BASE)", rev, why)
	}
	commit = strings.TrimSpace(string(out))
	bin = filepath.Join(root, "bin", "upgrade", commit, "bbs")
	if _, err := os.Stat(bin); err == nil {
		return bin, commit
	}
	src, err := os.MkdirTemp("", "bbs-upgrade-base-")
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(src) // git worktree add makes it
	git(t, root, "worktree", "add", "--detach", src, commit)
	defer func() {
		git(t, root, "worktree", "remove", "--force", src)
	}()
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	build := exec.Command("go", "build", "-o", tmp, "./cmd/bbs")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build bbs at %s: %v\n%s", commit, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin, commit
}

// latestMigrationAt is the highest migration number in db/migrations at rev ("" is the
// working tree).
func latestMigrationAt(t *testing.T, root, rev string) int {
	t.Helper()
	var names []string
	if rev == "" {
		files, _ := filepath.Glob(filepath.Join(root, "db", "migrations", "*.up.sql"))
		for _, f := range files {
			names = append(names, filepath.Base(f))
		}
	} else {
		for _, p := range strings.Split(git(t, root, "ls-tree", "--name-only", rev, "db/migrations/"), "\n") {
			names = append(names, filepath.Base(p))
		}
	}
	latest := 0
	for _, n := range names {
		if num, _, ok := strings.Cut(n, "_"); ok && strings.HasSuffix(n, ".up.sql") {
			if v, err := strconv.Atoi(num); err == nil {
				latest = max(latest, v)
			}
		}
	}
	return latest
}

// copyFile copies an executable to dst through a temporary name, so that a process started
// from dst at any moment runs the old file or the new one, never half of one.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".new"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}
