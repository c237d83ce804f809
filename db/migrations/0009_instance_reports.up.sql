-- What a Diego cell reports when it starts an instance (BBS's StartActualLRP): the internal
-- routes and the metric tags of the container it runs. Our cells run what the LRP desires,
-- so the store records the LRP's values when the instance becomes RUNNING: the raw
-- "internal-router" route value (its hostnames read on read) and the LRP's metric tags with
-- their dynamic values (INDEX, INSTANCE_GUID) resolved as they are written. They stay while the instance keeps its container (a crash
-- keeps them, as in BBS) and are taken afresh at its next start; NULL before the first start.
ALTER TABLE actual_lrps ADD COLUMN internal_routes json;
ALTER TABLE actual_lrps ADD COLUMN metric_tags json;
