-- Every convergence pass looks for SUSPECT instances whose replacement runs, and leaves the
-- LRPs with SUSPECT or EVACUATING instances out of its cheap whole-fleet check (they get the
-- exact one). The common pass has none of either: without this index finding that out read
-- the whole primary key (250,000 entries at Diego's scale, about 25 ms of each pass).
CREATE INDEX actual_lrps_not_ordinary ON actual_lrps (process_guid, instance_index) WHERE presence <> 'ORDINARY';

-- The whole fleet is listed ordered by process guid, index, definition and presence
-- (actual_lrps/list, the groups): with the key in that order the list reads the key in
-- order instead of sorting every LRP's instances again (about a third of PostgreSQL's time
-- for 250,000 instances). Lookups of one instance use the whole key either way, and those of
-- one LRP its first column.
ALTER TABLE actual_lrps DROP CONSTRAINT actual_lrps_pkey,
    ADD CONSTRAINT actual_lrps_pkey PRIMARY KEY (process_guid, instance_index, definition_id, presence);

-- Ports are written by the store (encoding/json) and read back whole, never queried: json
-- keeps the text as written, where jsonb rebuilt it from its binary form for every instance
-- listed (about a third of PostgreSQL's time for a list of 250,000).
ALTER TABLE actual_lrps ALTER COLUMN ports DROP DEFAULT,
    ALTER COLUMN ports TYPE json USING ports::json,
    ALTER COLUMN ports SET DEFAULT '[]';
