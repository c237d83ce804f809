ALTER TABLE actual_lrps DROP COLUMN IF EXISTS metric_tags;
ALTER TABLE actual_lrps DROP COLUMN IF EXISTS internal_routes;
