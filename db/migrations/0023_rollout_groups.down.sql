DROP INDEX rollouts_group;
ALTER TABLE rollouts DROP COLUMN group_id;
DROP TABLE rollout_group_members;
DROP TABLE rollout_groups;
