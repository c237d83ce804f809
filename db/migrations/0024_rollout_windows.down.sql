DROP TABLE rollout_freeze;
DROP TABLE rollout_windows;
