//go:build !linux

package compat

import "syscall"

// dieWithParent has no equivalent outside Linux: a killed test run may leave its children.
func dieWithParent() *syscall.SysProcAttr { return nil }
