-- Rollout windows and the freeze (ROLLOUTS-NEXT.md section 6, "Windows and freezes"). A
-- window is a named schedule (model.RolloutWindow, validated by the API) that a strategy or
-- a group names. The freeze is one row: a start of a rollout takes it FOR SHARE in its own
-- transaction, a freeze or unfreeze updates it, so that no rollout starts between a freeze's
-- commit and the signals it then sends to the rollouts under way.
CREATE TABLE rollout_windows (
    name       text PRIMARY KEY,
    schedule   jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE rollout_freeze (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id),
    frozen     boolean NOT NULL DEFAULT false,
    reason     text NOT NULL DEFAULT '',
    generation bigint NOT NULL DEFAULT 0,
    changed_at timestamptz
);

INSERT INTO rollout_freeze (id) VALUES (true);
