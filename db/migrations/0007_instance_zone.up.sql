-- What BBS clients read of an instance beyond our own fields: the availability zone of its
-- cell, recorded when the cell claims or starts it (a column, not a join on cells, so that a
-- list of the fleet reads one table and a cell that later vanishes leaves its instances'
-- zone in place), and which address routers should prefer, as the cell reports it. Both are
-- empty while the instance has no cell.
ALTER TABLE actual_lrps ADD COLUMN availability_zone text NOT NULL DEFAULT '';
ALTER TABLE actual_lrps ADD COLUMN preferred_address text NOT NULL DEFAULT ''
    CHECK (preferred_address IN ('', 'INSTANCE', 'HOST'));
