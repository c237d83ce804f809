-- Completion callbacks are delivered by a pool in each worker process, with the task's row
-- as the durable record (docs/TASKS.md): a pool claims the rows it delivers for a lease it
-- renews while it works, so that the claims of a killed worker expire and another delivers
-- them. A receiver that keeps failing is retried with back-off (callback_next_at), then
-- handed over to a Temporal workflow (callback_handed_over), which the pools leave alone.
ALTER TABLE tasks
    ADD COLUMN callback_claimed_by    text NOT NULL DEFAULT '',
    ADD COLUMN callback_claimed_until timestamptz,
    ADD COLUMN callback_attempts      integer NOT NULL DEFAULT 0,
    ADD COLUMN callback_next_at       timestamptz,
    ADD COLUMN callback_last_error    text NOT NULL DEFAULT '',
    ADD COLUMN callback_handed_over   boolean NOT NULL DEFAULT false;

-- A RESOLVING task with a callback has its delivery workflow already (the one way callbacks
-- were delivered before): it keeps it.
UPDATE tasks SET callback_handed_over = true WHERE state = 'RESOLVING' AND callback_url <> '';

-- What the pools claim, oldest first.
CREATE INDEX tasks_callbacks_due ON tasks (updated_at)
    WHERE state IN ('COMPLETED', 'RESOLVING') AND callback_url <> '' AND NOT callback_handed_over;

-- A task with a callback that completes wakes the pools at once (they poll besides).
CREATE FUNCTION bbs_notify_task_callbacks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('bbs_task_callbacks', '');
    RETURN NULL;
END $$;

CREATE TRIGGER tasks_notify_callbacks AFTER UPDATE OF state ON tasks
    FOR EACH ROW WHEN (NEW.state = 'COMPLETED' AND OLD.state <> 'COMPLETED' AND NEW.callback_url <> '')
    EXECUTE FUNCTION bbs_notify_task_callbacks();
