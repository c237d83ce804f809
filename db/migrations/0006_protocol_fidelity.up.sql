-- What a BBS-protocol client writes comes back as it wrote it (BBS-PROTOCOL.md §5.4, 2), and
-- scheduling infos carry BBS's max_pids and volume placement without reading any run info.

ALTER TABLE lrp_definitions
    -- The definition's protobuf (an LRPDefinition without its id) as a BBS-protocol client
    -- sent it, the fields our cells ignore included; NULL for a definition created through
    -- the JSON API. The other columns and run_info are filled from it.
    ADD COLUMN protobuf       bytea,
    ADD COLUMN max_pids       integer NOT NULL DEFAULT 0 CHECK (max_pids >= 0),
    -- The drivers of the definition's volume mounts (BBS's VolumePlacement).
    ADD COLUMN volume_drivers text[] NOT NULL DEFAULT '{}';

UPDATE lrp_definitions
SET volume_drivers = ARRAY(SELECT coalesce(m->>'driver', '') FROM jsonb_array_elements(run_info->'volume_mounts') AS m)
WHERE jsonb_typeof(run_info->'volume_mounts') = 'array';

-- The route values byte for byte (a JSON object of base64 strings): routes, being a JSON
-- document re-encoded on the way in, keeps them only compacted and escaped. NULL for rows
-- written before this column: routes is then all there is.
ALTER TABLE desired_lrps ADD COLUMN routes_exact bytea;
