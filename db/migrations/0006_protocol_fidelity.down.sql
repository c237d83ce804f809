ALTER TABLE desired_lrps DROP COLUMN IF EXISTS routes_exact;
ALTER TABLE lrp_definitions
    DROP COLUMN IF EXISTS volume_drivers,
    DROP COLUMN IF EXISTS max_pids,
    DROP COLUMN IF EXISTS protobuf;
