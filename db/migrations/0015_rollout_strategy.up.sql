-- Rollout strategies (ROLLOUTS-NEXT.md section 1): an LRP's default strategy, as given on desire
-- or update (NULL: none, the server's applies), and the strategy each rollout resolved at its
-- start (NULL for rollouts started before strategies: the server's flags apply). Both are
-- written and read whole by the store, never queried. Added columns only: the previous
-- release's code reads and writes these tables as before.
ALTER TABLE desired_lrps ADD COLUMN rollout_strategy jsonb;
ALTER TABLE rollouts ADD COLUMN strategy jsonb;
