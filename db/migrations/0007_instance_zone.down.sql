ALTER TABLE actual_lrps DROP COLUMN IF EXISTS preferred_address;
ALTER TABLE actual_lrps DROP COLUMN IF EXISTS availability_zone;
