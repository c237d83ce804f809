ALTER TABLE actual_lrps DROP COLUMN IF EXISTS not_ready;
