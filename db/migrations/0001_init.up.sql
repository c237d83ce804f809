-- The BBS store: domains, LRPs with versioned definitions (seed 004), instances, rollouts, cells.

CREATE TABLE domains (
    name       text PRIMARY KEY,
    -- NULL: the domain never expires (ttl 0).
    expires_at timestamptz
);

-- One row per LRP. Its definitions live in lrp_definitions; the ids below must name live
-- definitions of this LRP (the seed-000 invariants), enforced by the foreign keys at the end
-- of this file.
CREATE TABLE desired_lrps (
    process_guid           text PRIMARY KEY,
    domain                 text NOT NULL,
    instances              integer NOT NULL CHECK (instances >= 0),
    -- json, not jsonb: opaque router configuration is returned exactly as given.
    routes                 json NOT NULL DEFAULT '{}',
    annotation             text NOT NULL DEFAULT '',
    metric_tags            json NOT NULL DEFAULT '{}',
    active_definition_id   text NOT NULL,
    -- NULL until an instance has ever been RUNNING.
    healthy_definition_id  text,
    -- Set only while a rollout is in progress (seed 001).
    previous_definition_id text,
    modification_epoch     text NOT NULL,
    modification_index     integer NOT NULL DEFAULT 0,
    -- Always true: lets the foreign keys below reach only live definitions.
    definitions_live       boolean NOT NULL DEFAULT true CHECK (definitions_live),
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX desired_lrps_domain ON desired_lrps (domain);

-- Versioned definitions: one row per (process_guid, definition_id). Live rows form the
-- LRPDeployment's definitions map; retired rows (live = false) are the rollback history that
-- survives until pruned. Scheduling fields are columns so that scheduling infos never read
-- the run info.
CREATE TABLE lrp_definitions (
    process_guid   text NOT NULL REFERENCES desired_lrps (process_guid) ON DELETE CASCADE,
    definition_id  text NOT NULL,
    rootfs         text NOT NULL,
    memory_mb      integer NOT NULL CHECK (memory_mb >= 0),
    disk_mb        integer NOT NULL CHECK (disk_mb >= 0),
    log_guid       text NOT NULL DEFAULT '',
    placement_tags text[] NOT NULL DEFAULT '{}',
    run_info       jsonb NOT NULL,
    live           boolean NOT NULL DEFAULT true,
    created_at     timestamptz NOT NULL DEFAULT now(),
    retired_at     timestamptz,
    PRIMARY KEY (process_guid, definition_id),
    UNIQUE (process_guid, definition_id, live),
    CHECK (live = (retired_at IS NULL))
);

-- Deferred so that an LRP and its first definition can be inserted in one transaction, in
-- either order; a definition that the LRP names cannot be retired (live = false) or deleted.
ALTER TABLE desired_lrps
    ADD CONSTRAINT desired_lrps_active_definition
        FOREIGN KEY (process_guid, active_definition_id, definitions_live)
        REFERENCES lrp_definitions (process_guid, definition_id, live)
        DEFERRABLE INITIALLY DEFERRED,
    ADD CONSTRAINT desired_lrps_healthy_definition
        FOREIGN KEY (process_guid, healthy_definition_id, definitions_live)
        REFERENCES lrp_definitions (process_guid, definition_id, live)
        DEFERRABLE INITIALLY DEFERRED,
    ADD CONSTRAINT desired_lrps_previous_definition
        FOREIGN KEY (process_guid, previous_definition_id, definitions_live)
        REFERENCES lrp_definitions (process_guid, definition_id, live)
        DEFERRABLE INITIALLY DEFERRED;

-- Instances. No foreign key to desired_lrps: as in BBS, an instance record outlives its LRP
-- until its cell has stopped it, and a cell may report a running instance the store lost.
CREATE TABLE actual_lrps (
    process_guid       text NOT NULL,
    definition_id      text NOT NULL,
    instance_index     integer NOT NULL CHECK (instance_index >= 0),
    presence           text NOT NULL DEFAULT 'ORDINARY'
                       CHECK (presence IN ('ORDINARY', 'EVACUATING', 'SUSPECT')),
    domain             text NOT NULL,
    state              text NOT NULL
                       CHECK (state IN ('UNCLAIMED', 'CLAIMED', 'RUNNING', 'CRASHED')),
    instance_guid      text NOT NULL DEFAULT '',
    cell_id            text NOT NULL DEFAULT '',
    address            text NOT NULL DEFAULT '',
    ports              jsonb NOT NULL DEFAULT '[]',
    instance_address   text NOT NULL DEFAULT '',
    placement_error    text NOT NULL DEFAULT '',
    since              bigint NOT NULL,
    crash_count        integer NOT NULL DEFAULT 0,
    crash_reason       text NOT NULL DEFAULT '',
    modification_epoch text NOT NULL,
    modification_index integer NOT NULL DEFAULT 0,
    PRIMARY KEY (process_guid, definition_id, instance_index, presence),
    -- UNCLAIMED and CRASHED instances hold no cell (BBS's state machine).
    CHECK (state NOT IN ('UNCLAIMED', 'CRASHED') OR (cell_id = '' AND instance_guid = ''))
);
CREATE INDEX actual_lrps_cell ON actual_lrps (cell_id) WHERE cell_id <> '';
CREATE INDEX actual_lrps_domain ON actual_lrps (domain);
CREATE INDEX actual_lrps_state ON actual_lrps (state) WHERE state <> 'RUNNING';

CREATE TABLE rollouts (
    id                 uuid PRIMARY KEY,
    process_guid       text NOT NULL,
    kind               text NOT NULL CHECK (kind IN ('update', 'rollback', 'activate')),
    from_definition_id text NOT NULL,
    to_definition_id   text NOT NULL,
    state              text NOT NULL CHECK (state IN
                       ('active', 'paused', 'canceling', 'completed', 'canceled', 'superseded', 'failed')),
    current_index      integer NOT NULL DEFAULT 0,
    updated_instances  integer NOT NULL DEFAULT 0,
    instances          integer NOT NULL,
    given_up_indices   integer[] NOT NULL DEFAULT '{}',
    started_at         timestamptz NOT NULL DEFAULT now(),
    finished_at        timestamptz,
    workflow_id        text NOT NULL,
    run_id             text NOT NULL DEFAULT '',
    reason             text NOT NULL DEFAULT ''
);
-- At most one rollout in progress per LRP.
CREATE UNIQUE INDEX rollouts_one_in_progress ON rollouts (process_guid)
    WHERE state IN ('active', 'paused', 'canceling');
CREATE INDEX rollouts_process_guid ON rollouts (process_guid, started_at DESC);

CREATE TABLE cells (
    cell_id        text PRIMARY KEY,
    zone           text NOT NULL,
    rep_address    text NOT NULL,
    memory_mb      integer NOT NULL CHECK (memory_mb >= 0),
    disk_mb        integer NOT NULL CHECK (disk_mb >= 0),
    containers     integer NOT NULL CHECK (containers >= 0),
    placement_tags text[] NOT NULL DEFAULT '{}',
    expires_at     timestamptz NOT NULL
);
