ALTER TABLE actual_lrps ALTER COLUMN ports DROP DEFAULT,
    ALTER COLUMN ports TYPE jsonb USING ports::jsonb,
    ALTER COLUMN ports SET DEFAULT '[]';
ALTER TABLE actual_lrps DROP CONSTRAINT actual_lrps_pkey,
    ADD CONSTRAINT actual_lrps_pkey PRIMARY KEY (process_guid, definition_id, instance_index, presence);
DROP INDEX IF EXISTS actual_lrps_not_ordinary;
