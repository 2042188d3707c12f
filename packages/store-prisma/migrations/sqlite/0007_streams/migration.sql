-- The streams capability on SQLite: each run's stream, one row per batch of sealed parts,
-- keyed by the run and the offset of its first part (the primary key), so an append finds where
-- the stream ends, and a read from any part finds the batch holding it, by a range of the key.
-- Runs of an older database have no stream.
-- __PREFIX__ is replaced by the store's table prefix.
CREATE TABLE "__PREFIX__streams" (
    "run_id" TEXT NOT NULL,
    "offset" BIGINT NOT NULL,
    "count" INTEGER NOT NULL,
    "segment" INTEGER NOT NULL,
    "sealed" TEXT NOT NULL,
    PRIMARY KEY ("run_id", "offset")
);
