-- Convergence re-sends the stops of retiring instances and reaps those on vanished cells on
-- every pass: finding them must not read the whole fleet.
CREATE INDEX actual_lrps_retiring ON actual_lrps (cell_id) WHERE retiring;
