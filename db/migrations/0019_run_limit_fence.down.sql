ALTER TABLE rollouts DROP COLUMN run_limit_fence;
