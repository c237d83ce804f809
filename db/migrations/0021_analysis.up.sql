-- Canary analysis (ROLLOUTS-NEXT.md sections 1 and 2). A mark is what the live routers had
-- counted for an LRP at one moment, and the last event then: a window's figures are the
-- difference of two marks (and the crashes logged between them). Kept by rollout, named by
-- the workflow, so that a retried mark keeps the first snapshot. A rollout's verdicts are
-- its analysis list.
CREATE TABLE analysis_marks (
    rollout_id uuid NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    name       text NOT NULL,
    taken_at   timestamptz NOT NULL DEFAULT now(),
    last_event bigint NOT NULL,
    routers    jsonb NOT NULL,
    PRIMARY KEY (rollout_id, name)
);

ALTER TABLE rollouts ADD COLUMN analysis jsonb NOT NULL DEFAULT '[]';
