DROP TRIGGER IF EXISTS events_notify ON events;
CREATE OR REPLACE FUNCTION bbs_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('bbs_events', '');
    RETURN NULL;
END $$;
CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION bbs_notify_events();
