// Package procs lists the live processes of this machine (Linux /proc) with some of their
// environment: instances of a process cell carry their instance guid and home there, which
// is how a restarted cell finds the processes its predecessor started, and how the chaos
// driver finds processes no cell accounts for.
package procs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Process is a live (not zombie) process.
type Process struct {
	PID, PGID int
	// Env holds the variables of the process's initial environment that Scan was asked for.
	Env map[string]string
}

// Scan lists the live processes that have at least one of the variables keys in their
// environment, with those variables. Processes it may not read (another user's) are left out.
func Scan(keys ...string) ([]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		vars := map[string]string{}
		for _, kv := range bytes.Split(env, []byte{0}) {
			name, value, ok := strings.Cut(string(kv), "=")
			for _, k := range keys {
				if ok && name == k {
					vars[k] = value
				}
			}
		}
		if len(vars) == 0 {
			continue
		}
		pgid, live := stat(pid)
		if !live {
			continue
		}
		out = append(out, Process{PID: pid, PGID: pgid, Env: vars})
	}
	return out, nil
}

// stat reads a process's group and whether it is live: a zombie has exited and waits only
// for its parent (which, for an orphan in a container, may never come) to reap it.
func stat(pid int) (pgid int, live bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// Format: pid (comm) state ppid pgrp ...; comm may contain spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	pgid, err = strconv.Atoi(f[2])
	return pgid, err == nil
}

// GroupAlive reports whether process group pgid has a live member. Zombies do not count:
// orphaned children are reparented to the host's init, which in a container may never reap
// them, and a group of zombies has nothing left to stop.
func GroupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // no /proc: trust kill
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, live := stat(pid); live && g == pgid {
			return true
		}
	}
	return false
}
