ALTER TABLE rollouts
    DROP COLUMN run_in_flight,
    DROP COLUMN run_limit;
