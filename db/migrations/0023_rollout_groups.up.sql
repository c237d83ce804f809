-- Rollout groups (ROLLOUTS-NEXT.md section 6): one change applied to many LRPs in waves,
-- under budgets that hold at every instant because they are checked in the transactions that
-- spend them. Added tables and a nullable column only: the previous release's code ignores
-- them.

-- A group: its request as given (spec), where it stands, and its current wave. The next
-- wave opens at wave_opens_at (the pause between waves) once the current one has ended.
CREATE TABLE rollout_groups (
    group_id      text PRIMARY KEY,
    spec          jsonb NOT NULL,
    state         text NOT NULL,
    reason        text NOT NULL DEFAULT '',
    wave          integer NOT NULL DEFAULT 0,
    wave_opens_at timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
);

-- Its members, chosen and ordered when the group is created (a member's rollout row exists
-- only once it starts rolling). A member is rolling exactly while its rollout is in
-- progress: the statement that ends a rollout ends its member.
CREATE TABLE rollout_group_members (
    group_id      text NOT NULL REFERENCES rollout_groups (group_id) ON DELETE CASCADE,
    position      integer NOT NULL,
    process_guid  text NOT NULL,
    wave          integer NOT NULL,
    state         text NOT NULL,
    reason        text NOT NULL DEFAULT '',
    rollout_id    uuid,
    definition_id text NOT NULL DEFAULT '',
    PRIMARY KEY (group_id, position),
    UNIQUE (group_id, process_guid)
);

CREATE INDEX rollout_group_members_rollout ON rollout_group_members (rollout_id) WHERE rollout_id IS NOT NULL;
CREATE INDEX rollout_group_members_open ON rollout_group_members (group_id, wave, state);
-- An LRP's removal skips its open memberships.
CREATE INDEX rollout_group_members_lrp ON rollout_group_members (process_guid) WHERE state IN ('pending', 'rolling');

-- The group a rollout belongs to, if any: what the per-cell budget counts, and what the
-- RolloutGroup search attribute says.
ALTER TABLE rollouts ADD COLUMN group_id text;
CREATE INDEX rollouts_group ON rollouts (group_id) WHERE group_id IS NOT NULL;
