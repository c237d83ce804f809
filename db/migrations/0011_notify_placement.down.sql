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
