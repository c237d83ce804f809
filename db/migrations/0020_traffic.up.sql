-- Traffic through the router (ROLLOUTS-NEXT.md section 5). An LRP's split of requests between
-- its definitions while a rollout holds a weighted step (NULL: by instances, as always), and
-- its generation, which grows with every change so that routers acknowledge exactly what
-- they applied. Added columns only: the previous release's code ignores them.
ALTER TABLE desired_lrps ADD COLUMN traffic jsonb,
    ADD COLUMN traffic_generation bigint NOT NULL DEFAULT 0;

-- What the rollout reports as the routers last acknowledged it.
ALTER TABLE rollouts ADD COLUMN traffic jsonb,
    ADD COLUMN traffic_generation bigint NOT NULL DEFAULT 0;

-- The routers that report to the BBS: a router is live while it reported within a few
-- seconds. applied maps process guid to the generation of the split it routes by; telemetry
-- maps "process_guid/definition_id" to the router's cumulative counts since started_at.
CREATE TABLE routers (
    router_id  text PRIMARY KEY,
    started_at timestamptz NOT NULL,
    seen_at    timestamptz NOT NULL,
    applied    jsonb NOT NULL DEFAULT '{}',
    telemetry  jsonb NOT NULL DEFAULT '{}'
);
