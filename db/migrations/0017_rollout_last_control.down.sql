ALTER TABLE rollouts DROP COLUMN IF EXISTS last_control;
