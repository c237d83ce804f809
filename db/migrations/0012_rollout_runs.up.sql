-- A rollout's forward walk may run as one activity over many indices (an index run, see
-- db/rollout_run.go). Its writes are fenced: the workflow opens a run by bumping run_fence
-- and stops it by bumping it again, and an attempt of the activity holds the run by writing
-- its attempt number, so a run the workflow abandoned (a signal) or an attempt Temporal gave
-- up on (a dead worker) can change nothing. What the run did is kept on the row, for the
-- workflow to learn when it stops the run and for a retried attempt to resume.
ALTER TABLE rollouts
    ADD COLUMN run_fence    bigint    NOT NULL DEFAULT 0,
    ADD COLUMN run_attempt  integer   NOT NULL DEFAULT 0,
    ADD COLUMN run_updated  integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN run_given_up integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN run_index    integer   NOT NULL DEFAULT -1;
