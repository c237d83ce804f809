DROP INDEX IF EXISTS actual_lrps_unclaimed;
ALTER TABLE cells DROP COLUMN IF EXISTS evacuating;
DROP TRIGGER IF EXISTS events_notify ON events;
DROP FUNCTION IF EXISTS bbs_notify_events();
DROP TABLE IF EXISTS events;
