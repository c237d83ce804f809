-- The trigger as migration 0011 left it, reading everything from the JSON.
CREATE OR REPLACE FUNCTION bbs_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    guid text;
BEGIN
    PERFORM pg_notify('bbs_events', '');
    IF EXISTS (SELECT 1 FROM new_events e WHERE
            (e.name IN ('actual_lrp_instance_created', 'actual_lrp_instance_changed')
                AND coalesce(e.data->'after'->>'state', e.data->>'state') = 'UNCLAIMED')
            OR (e.name IN ('task_created', 'task_changed')
                AND coalesce(e.data->'after'->>'state', e.data->>'state') = 'PENDING')) THEN
        PERFORM pg_notify('bbs_placement', '');
    END IF;
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

ALTER TABLE events DROP COLUMN process_guid, DROP COLUMN placement;
