-- The event log behind GET /v1/events/lrp_instances and the database notifications that wake
-- waiters (the event stream, placement, rollouts). Every change writes its events in its own
-- transaction; one NOTIFY per statement tells listeners to read what is new.
CREATE TABLE events (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL,
    data       json NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_created_at ON events (created_at);

CREATE FUNCTION bbs_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('bbs_events', '');
    RETURN NULL;
END $$;

CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION bbs_notify_events();

-- A draining cell takes no new work (evacuation).
ALTER TABLE cells ADD COLUMN evacuating boolean NOT NULL DEFAULT false;

-- Placement looks up UNCLAIMED instances and what each cell holds.
CREATE INDEX actual_lrps_unclaimed ON actual_lrps (since) WHERE state = 'UNCLAIMED';
