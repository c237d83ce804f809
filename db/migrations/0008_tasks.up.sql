-- Tasks: Diego's run-once work (seed 003, BBS-PROTOCOL.md §3). A task is one row; its
-- definition is kept as the model's JSON and, for a task a BBS-protocol client desired, as
-- the protobuf it sent, so that every field comes back as it was given. Placement reads the
-- size and tags from their own columns; times are Unix nanoseconds, as BBS's.
CREATE TABLE tasks (
    task_guid          text PRIMARY KEY CHECK (task_guid ~ '^[a-zA-Z0-9_-]{1,255}$'),
    domain             text NOT NULL CHECK (domain <> ''),
    state              text NOT NULL CHECK (state IN ('PENDING', 'RUNNING', 'COMPLETED', 'RESOLVING')),
    -- The cell running it: set while RUNNING only.
    cell_id            text NOT NULL DEFAULT '',
    definition         jsonb NOT NULL,
    protobuf           bytea,
    memory_mb          integer NOT NULL CHECK (memory_mb >= 0),
    disk_mb            integer NOT NULL CHECK (disk_mb >= 0),
    placement_tags     text[] NOT NULL DEFAULT '{}',
    callback_url       text NOT NULL DEFAULT '',
    created_at         bigint NOT NULL,
    updated_at         bigint NOT NULL,
    first_completed_at bigint NOT NULL DEFAULT 0,
    result             text NOT NULL DEFAULT '',
    failed             boolean NOT NULL DEFAULT false,
    failure_reason     text NOT NULL DEFAULT '',
    rejection_count    integer NOT NULL DEFAULT 0,
    rejection_reason   text NOT NULL DEFAULT '',
    CHECK ((state = 'RUNNING') = (cell_id <> ''))
);

CREATE INDEX tasks_domain ON tasks (domain);
CREATE INDEX tasks_cell ON tasks (cell_id) WHERE cell_id <> '';
-- Placement and convergence look for tasks by state.
CREATE INDEX tasks_state ON tasks (state, updated_at);
