-- Placement hears only of work for it: a statement whose events make an instance UNCLAIMED
-- (created, or moved back to UNCLAIMED) or a task PENDING (desired, or rejected back to
-- PENDING) notifies bbs_placement besides bbs_events. Claims, starts, crashes and every other
-- change no longer wake the auctioneer (a rollout's index wrote six statements, each waking
-- it); capacity a crash or a stop frees is picked up by its periodic round.
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
