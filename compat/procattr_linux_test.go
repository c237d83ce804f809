package compat

import "syscall"

// dieWithParent interrupts a child when this test binary dies, so that a test run killed
// by its timeout does not leave a dev system (PostgreSQL, Temporal, cells) behind: bbs stops
// what it started on SIGINT.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT}
}
