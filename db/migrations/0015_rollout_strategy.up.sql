-- Rollout strategies (ROLLOUTS-NEXT.md section 1): an LRP's default strategy, as given on desire
-- or update (NULL: none, the server's applies), and the strategy each rollout resolved at its
-- start (NULL for rollouts started before strategies: the server's flags apply). Both are
-- written and read whole by the store, never queried. Added columns only: the previous
-- release's code reads and writes these tables as before.
ALTER TABLE desired_lrps ADD COLUMN rollout_strategy jsonb;
ALTER TABLE rollouts ADD COLUMN strategy jsonb;

-- Failures and automatic revert (ROLLOUTS-NEXT.md section 4): why a rollout failed, why its
-- revert failed (if it did), and the definition a revert restored; a reverted rollout ends
-- in state 'reverted'. The previous release never writes that state, and reads it as an
-- ended rollout (it is not among the states in progress).
ALTER TABLE rollouts ADD COLUMN failure jsonb,
    ADD COLUMN revert_failure jsonb,
    ADD COLUMN reverted_to text NOT NULL DEFAULT '',
    -- Where a rollout with canary steps stands: its phase (canary, awaiting_promotion,
    -- walking; '' for a rollout without steps, whose state says its phase) and step.
    ADD COLUMN phase text NOT NULL DEFAULT '',
    ADD COLUMN step integer,
    DROP CONSTRAINT rollouts_state_check,
    ADD CONSTRAINT rollouts_state_check CHECK (state IN
        ('active', 'paused', 'canceling', 'completed', 'canceled', 'superseded', 'failed', 'reverted'));
