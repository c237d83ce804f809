DROP TABLE routers;
ALTER TABLE rollouts DROP COLUMN traffic, DROP COLUMN traffic_generation;
ALTER TABLE desired_lrps DROP COLUMN traffic, DROP COLUMN traffic_generation;
