DROP TRIGGER tasks_notify_callbacks ON tasks;
DROP FUNCTION bbs_notify_task_callbacks();
DROP INDEX tasks_callbacks_due;
ALTER TABLE tasks
    DROP COLUMN callback_claimed_by,
    DROP COLUMN callback_claimed_until,
    DROP COLUMN callback_attempts,
    DROP COLUMN callback_next_at,
    DROP COLUMN callback_last_error,
    DROP COLUMN callback_handed_over;
