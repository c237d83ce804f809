DROP INDEX IF EXISTS actual_lrps_retiring;
