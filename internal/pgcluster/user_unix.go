//go:build unix

package pgcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// runAs is the unprivileged account the server processes run under. It is
// nil when we are not root: then the processes simply run as ourselves.
type runAs struct {
	name   string
	uid    uint32
	gid    uint32
	groups []uint32
}

// serverUser picks the account for initdb, pg_ctl and postgres. PostgreSQL
// refuses to run as root, so as root we switch to the distribution's
// "postgres" account when it exists, else to "nobody".
func serverUser() (*runAs, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var tried []string
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		return newRunAs(u)
	}
	return nil, fmt.Errorf("pgcluster: running as root, but PostgreSQL refuses to run as root and no account to switch to was found (%s); run as a normal user or create a \"postgres\" user", strings.Join(tried, "; "))
}

func newRunAs(u *user.User) (*runAs, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: user %s has non-numeric uid %q", u.Username, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: user %s has non-numeric gid %q", u.Username, u.Gid)
	}
	r := &runAs{name: u.Username, uid: uint32(uid), gid: uint32(gid)}
	// Supplementary groups matter for the traversal check below; failing to
	// list them only makes that check stricter, so the error is ignored.
	ids, _ := u.GroupIds()
	for _, id := range ids {
		if g, err := strconv.ParseUint(id, 10, 32); err == nil {
			r.groups = append(r.groups, uint32(g))
		}
	}
	return r, nil
}

func (r *runAs) String() string {
	return fmt.Sprintf("%s (uid %d)", r.name, r.uid)
}

// prepare sets up cmd for a server binary: its own process group, so that a
// Ctrl-C in the terminal (SIGINT to the foreground group) reaches only our
// code, which then stops the server cleanly; and the server account's
// credentials when we are root.
func (r *runAs) prepare(cmd *exec.Cmd) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if r != nil {
		attr.Credential = &syscall.Credential{Uid: r.uid, Gid: r.gid, Groups: r.groups}
	}
	cmd.SysProcAttr = attr
}

// chownAll hands path (recursively) to the server account. Files that already
// belong to it are left alone so that resuming a large dev cluster does not
// rewrite every inode's metadata.
func (r *runAs) chownAll(path string) error {
	if r == nil {
		return nil
	}
	return filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Uid == r.uid && st.Gid == r.gid {
			return nil
		}
		return os.Lchown(p, int(r.uid), int(r.gid))
	})
}

// canSearch reports whether the server account may enter directory info,
// following the kernel's owner/group/other precedence (ACLs are ignored).
func (r *runAs) canSearch(info os.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	mode := info.Mode().Perm()
	switch {
	case st.Uid == r.uid:
		return mode&0o100 != 0
	case st.Gid == r.gid || containsID(r.groups, st.Gid):
		return mode&0o010 != 0
	default:
		return mode&0o001 != 0
	}
}

func containsID(ids []uint32, id uint32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// ensureTraversable makes sure the server account can reach dir, checking
// dir and every ancestor. A directory it cannot enter is opened up (o+x) only
// when it lies below os.TempDir(): those are the 0700 directories that
// os.MkdirTemp and t.TempDir() create for us. Anywhere else silently changing
// permissions of someone's directories would be a surprise, so we report it.
func (r *runAs) ensureTraversable(dir string) error {
	if r == nil {
		return nil
	}
	tmp := filepath.Clean(os.TempDir())
	for d := dir; ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			return err
		}
		if !r.canSearch(info) {
			if !strings.HasPrefix(d, tmp+string(filepath.Separator)) {
				return fmt.Errorf("pgcluster: the server runs as %s, which cannot enter %s (mode %v); make it traversable (chmod o+x %s) or put the data directory elsewhere", r, d, info.Mode().Perm(), d)
			}
			if err := os.Chmod(d, info.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("pgcluster: opening %s for %s: %w", d, r, err)
			}
			if info, err = os.Stat(d); err != nil || !r.canSearch(info) {
				return fmt.Errorf("pgcluster: the server runs as %s, which still cannot enter %s after chmod o+x", r, d)
			}
		}
		if parent := filepath.Dir(d); parent == d {
			return nil
		}
	}
}

// liveServer looks for a process still working on dataDir, which must be
// absolute. Every postgres process (postmaster and backends alike) has the
// data directory as its working directory, so on Linux /proc tells us even
// about orphaned backends whose postmaster is gone. Elsewhere, we fall back to
// probing the pid recorded in postmaster.pid.
func liveServer(dataDir string, pidFilePID int) (int, bool) {
	real, err := filepath.EvalSymlinks(dataDir)
	if err != nil {
		real = dataDir
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		if pidFilePID > 0 && processExists(pidFilePID) {
			return pidFilePID, true
		}
		return 0, false
	}
	found := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// Zombies have no cwd, so they fail here and are rightly skipped.
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || cwd != real || !isPostgres(pid) {
			continue
		}
		if pid == pidFilePID {
			return pid, true
		}
		if found == 0 {
			found = pid
		}
	}
	return found, found != 0
}

// postmasterAlive reports whether pid is still the postmaster of dataDir: a
// postgres process working in it. A killed postmaster whose parent has not
// reaped it yet is a zombie, which has no working directory.
func postmasterAlive(dataDir string, pid int) bool {
	if pid <= 0 {
		return false
	}
	real, err := filepath.EvalSymlinks(dataDir)
	if err != nil {
		real = dataDir
	}
	cwd, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
	if err != nil {
		if _, statErr := os.Stat("/proc/self"); statErr != nil {
			return processExists(pid) // no /proc: as liveServer, trust the pid
		}
		return false
	}
	return cwd == real && isPostgres(pid)
}

// isPostgres tells a server process from, say, a shell that happens to sit
// in the data directory.
func isPostgres(pid int) bool {
	comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	name := strings.TrimSpace(string(comm))
	return err == nil && (name == "postgres" || name == "postmaster")
}

// processExists reports whether pid is alive; EPERM means it exists but
// belongs to someone else.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// killGroup SIGKILLs the process group that pid leads or belongs to. The
// postmaster is a session leader (pg_ctl calls setsid) and its backends
// inherit its group, so this leaves no orphans. It refuses to touch our own
// group.
func killGroup(pid int) error {
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		return err
	}
	if pgid == syscall.Getpgrp() {
		return syscall.Kill(pid, syscall.SIGKILL)
	}
	return syscall.Kill(-pgid, syscall.SIGKILL)
}
