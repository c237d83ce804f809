// Package chaos proves, on the production topology (`bbs cluster`: PostgreSQL, the real
// Temporal server, API replicas behind their front, workers, cells and the router, each a
// supervised process), what the BBS promises when its processes die: it kills them (SIGKILL,
// or an immediate shutdown of PostgreSQL) during rollouts, cancels and rollbacks under
// traffic through the router, lets `bbs cluster` restart them as a supervisor does, and
// measures what users would see. `make chaos` runs the whole matrix of faults and `make soak`
// a mixed workload with random faults for minutes (both through cmd/chaos); `make test` runs
// a short form of the matrix (e2e).
//
// What is checked, precisely:
//
//   - Rollouts: every rollout started during a trial ends where its signals put it — an
//     update or a rollback "completed" on its target definition, a cancelled update
//     "canceled" on its source definition — within the trial's deadline.
//   - Requests: every request sent through the router to an app with at least two instances
//     answers 200 (Traffic). A request the router could not complete counts as failed,
//     whatever the reason.
//   - Running never below desired (Sampler): an LRP's desired count is one instance per
//     index below its `instances`. An index is owed from the first sample that shows it
//     RUNNING until the driver scales the LRP below it or removes the LRP; at every sample
//     each owed index must have at least one RUNNING instance that is not retiring, of any
//     definition and any presence (during a rollout the old and the new instance of an index
//     both count until the old one is retired, and so do an evacuating or suspect copy; a
//     retiring one does not, since routers have let it go). Samples are reads of the API; an
//     instant at which the API cannot answer (PostgreSQL down) is counted as unsampled, not as
//     a pass.
//   - Exactly one per index, afterwards (Settled): once the trial's rollouts have ended, every
//     LRP has exactly one instance per index, RUNNING, ORDINARY, on the definition its
//     rollout ended on, and none beyond its count.
//   - No orphans (Orphans, CellOrphans): every process on the machine that carries an
//     instance's CF_INSTANCE_GUID and lives in a cell's work directory is an instance the BBS
//     places on that cell, RUNNING or CLAIMED, or a task RUNNING there, and every RUNNING
//     instance the BBS places on a process cell has its process; every container a cell
//     reports (its state route, for cells of any executor) is accounted for the same way.
//   - Callbacks once (Callbacks): each task desired during a trial has its completion
//     callback delivered exactly once to the receiver (which answers 200).
//   - Events once (EventWatch): a subscriber to GET /v1/events/lrp_instances through the
//     front, which reconnects with Last-Event-ID whenever its stream breaks (the replica
//     serving it killed, the database down), sees event ids strictly increasing — no event
//     twice, none out of order — and every event of the store's log between its first and its
//     last (task events aside, which have a stream of their own): none missing.
package chaos
