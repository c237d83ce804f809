DROP INDEX IF EXISTS actual_lrps_not_ordinary;
