-- The last pause or resume the API accepted for a rollout (ROLLOUTS-NEXT.md section 3): ''
-- before any, else 'pause' or 'resume', written in the transaction that checks the control
-- applies to the locked row. A resume of a rollout that is not paused answers 200 when the
-- last control is one (a repeat, or a pause its workflow has not recorded yet) and
-- InvalidPhase otherwise. Added column only: the previous release's code reads and writes
-- rollouts as before (its new rows get the default).
--
-- Numbered 0017, not 0016, with 0016 left to another change: golang-migrate applies the files
-- in the order of their numbers and allows the gap, and this one depends on no other after
-- 0015 (IF NOT EXISTS: applying it twice changes nothing).
ALTER TABLE rollouts ADD COLUMN IF NOT EXISTS last_control text NOT NULL DEFAULT ''
    CONSTRAINT rollouts_last_control_check CHECK (last_control IN ('', 'pause', 'resume'));
