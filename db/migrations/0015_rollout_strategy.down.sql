-- A reverted rollout reads as canceled to the release before: it walked back, as a cancel does.
UPDATE rollouts SET state = 'canceled' WHERE state = 'reverted';
ALTER TABLE rollouts DROP CONSTRAINT rollouts_state_check,
    ADD CONSTRAINT rollouts_state_check CHECK (state IN
        ('active', 'paused', 'canceling', 'completed', 'canceled', 'superseded', 'failed')),
    DROP COLUMN step,
    DROP COLUMN phase,
    DROP COLUMN reverted_to,
    DROP COLUMN revert_failure,
    DROP COLUMN failure,
    DROP COLUMN strategy;
ALTER TABLE desired_lrps DROP COLUMN rollout_strategy;
