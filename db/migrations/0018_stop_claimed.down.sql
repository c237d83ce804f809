ALTER TABLE actual_lrps DROP COLUMN stop_claimed;
