-- A cell claims the stop of a retiring instance once its drain is over, in the statement that
-- checks the retirement still holds (db.Store.ClaimStop): from then on the retirement cannot be
-- withdrawn (a walk back's, a scale-up's), so a withdrawal and a stop can never both happen.
ALTER TABLE actual_lrps ADD COLUMN stop_claimed boolean NOT NULL DEFAULT false;
