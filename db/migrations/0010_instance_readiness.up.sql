-- Readiness: a RUNNING instance whose definition has readiness checks is routable only while
-- they pass, as its cell reports (BBS's StartActualLRP with routable = false, then true).
-- Cleared whenever the instance leaves RUNNING.
ALTER TABLE actual_lrps ADD COLUMN not_ready boolean NOT NULL DEFAULT false;
