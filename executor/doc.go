// Package executor runs the containers of one cell. It owns the container lifecycle of seed
// 003 (RESERVED → INITIALIZING → CREATED → RUNNING → COMPLETED) and health monitoring as seed
// 002 describes it; a Backend does the actual running: real local processes (package
// executor/process) or simulated instances (package executor/sim).
package executor
