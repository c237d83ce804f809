-- Every convergence pass looks for SUSPECT instances whose replacement runs, and leaves the
-- LRPs with SUSPECT or EVACUATING instances out of its cheap whole-fleet check (they get the
-- exact one). The common pass has none of either: without this index finding that out read
-- the whole primary key (250,000 entries at Diego's scale, about 25 ms of each pass).
CREATE INDEX actual_lrps_not_ordinary ON actual_lrps (process_guid, instance_index) WHERE presence <> 'ORDINARY';
