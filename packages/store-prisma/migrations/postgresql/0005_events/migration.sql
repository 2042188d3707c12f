-- The events capability on PostgreSQL: each run's inbox, one row per event, numbered 0, 1, 2, …
-- with no gap (the primary key) and each sender's key once (the unique index); and on the
-- run's row how many events its inbox holds (0 for runs saved before, whose inbox is empty),
-- so a save reads the count with the row it moves, counting no rows.
-- __SCHEMA__ and __PREFIX__ are replaced by the store's schema and table prefix.
ALTER TABLE "__SCHEMA__"."__PREFIX__runs" ADD COLUMN "events" INTEGER NOT NULL DEFAULT 0;
CREATE TABLE "__SCHEMA__"."__PREFIX__events" (
    "run_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "key" TEXT NOT NULL,
    "sealed" TEXT NOT NULL,
    CONSTRAINT "__PREFIX__events_pkey" PRIMARY KEY ("run_id", "seq")
);
CREATE UNIQUE INDEX "__PREFIX__events_run_id_key_key" ON "__SCHEMA__"."__PREFIX__events" ("run_id", "key");
