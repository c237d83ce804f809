ALTER TABLE rollouts DROP COLUMN strategy;
ALTER TABLE desired_lrps DROP COLUMN rollout_strategy;
