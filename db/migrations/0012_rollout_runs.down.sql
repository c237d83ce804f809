ALTER TABLE rollouts
    DROP COLUMN run_fence,
    DROP COLUMN run_attempt,
    DROP COLUMN run_updated,
    DROP COLUMN run_given_up,
    DROP COLUMN run_index;
