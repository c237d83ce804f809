-- Besides the one notification per statement on bbs_events (for the event stream and
-- placement), name each LRP a statement's events touch on bbs_lrp_changes, so that the
-- waits of a rollout wake only for their own LRP: 1,000 rollouts must not each re-check on
-- every change of every other LRP.
CREATE OR REPLACE FUNCTION bbs_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    guid text;
BEGIN
    PERFORM pg_notify('bbs_events', '');
    FOR guid IN
        SELECT DISTINCT coalesce(data->>'process_guid', data->'after'->>'process_guid', data->'before'->>'process_guid')
        FROM new_events
    LOOP
        IF guid IS NOT NULL THEN
            PERFORM pg_notify('bbs_lrp_changes', guid);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

DROP TRIGGER events_notify ON events;
CREATE TRIGGER events_notify AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION bbs_notify_events();
