ALTER TABLE rollouts DROP COLUMN analysis;
DROP TABLE analysis_marks;
