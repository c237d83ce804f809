-- A run's limit holds for the run it was set for: run_limit_fence is that run's fence. (The
-- OpenRun of the version before 0016 leaves run_limit as it was; a run it opens must not
-- inherit a pause of an earlier run.)
ALTER TABLE rollouts ADD COLUMN run_limit_fence bigint NOT NULL DEFAULT 0;
