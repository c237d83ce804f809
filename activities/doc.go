// Package activities holds every side effect the workflows need — database writes, placement
// requests, waiting for an instance to be RUNNING — as idempotent methods on a struct that
// carries their dependencies, because Temporal retries them.
package activities
