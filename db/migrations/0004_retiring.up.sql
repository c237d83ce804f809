-- An instance handed to its cell to stop for good (a rollout retiring the old definition at
-- an index, or giving up on a new one) must not come back: if its cell reports a crash
-- before the stop, the crash removes it instead of restarting it, and placement never
-- places it again. Convergence re-sends the stop until the cell reports it.
ALTER TABLE actual_lrps ADD COLUMN retiring boolean NOT NULL DEFAULT false;
