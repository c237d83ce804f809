-- An index run walks a set of indices at once (max_in_flight), forward or back (db/rollout_run.go):
-- run_in_flight are the indices it desired and has not decided yet (run_index stays their lowest,
-- or -1, for workers of the version before), run_limit how many it may have in flight now, as
-- the workflow set it (a pause drains the run with 0, set_pace changes it; -1: as the run was
-- started).
ALTER TABLE rollouts
    ADD COLUMN run_in_flight integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN run_limit     integer   NOT NULL DEFAULT -1;
